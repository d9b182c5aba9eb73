package sharedconfig_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
)

// A registration has an identity. Process a registers L and stops
// refreshing it (as if stopped); b, with the same --writer, expires it,
// registers it again and dies. a, its copy still showing its own
// registration, cannot refresh, put under or revoke b's: its late refresh
// lands and changes nothing, and its clean exit reports the registration
// it lost instead of revoking b's. a's keeper does not keep b's lease
// alive: it expires within the ttl and 2 seconds of b's death.
func TestStaleRegistrantNeverTouchesTheNextRegistration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := jstest.Server(t)
	open := func() *sharedconfig.Config {
		l, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "identity", "leases", jetstream.LogOptions{})
		ok(t, err)
		c, err := sharedconfig.Open(ctx, l, sharedconfig.Options{Holder: "server-1"})
		ok(t, err)
		return c
	}
	a, b := open(), open()
	const ttl = 2 * time.Second // a 1 s lease gives b's witness 400 ms to land, which a loaded machine can miss (the lease then lives another ttl)
	_, err := a.Leases().Register(ctx, "L", ttl)
	ok(t, err)
	_, err = a.Put(ctx, "/servers/1", "A-addr", sharedconfig.WithLease("L"))
	ok(t, err)

	bs := expireAndRegisterAgain(t, b, ttl)
	stopped := time.Now() // b died

	if _, err := a.Leases().Refresh(ctx, "L"); !errors.Is(err, lease.ErrNotMine) {
		t.Fatalf("a's late refresh: %v, want lease.ErrNotMine", err)
	}
	if l, _ := a.State().Lease("L"); l != bs {
		t.Fatalf("a's late refresh made b's lease %+v, was %+v", l, bs)
	}
	if _, err := a.Put(ctx, "/servers/1", "A-again", sharedconfig.WithLease("L")); !errors.Is(err, lease.ErrNotMine) {
		t.Fatalf("a's put under b's registration: %v, want lease.ErrNotMine", err)
	}
	lost, err := a.Leases().RevokeHeld(ctx)
	ok(t, err)
	if len(lost) != 1 || !strings.Contains(lost[0].String(), "registered again by another process of writer 'server-1'") {
		t.Fatalf("a's exit reported %v, want the registration it lost", lost)
	}
	ok(t, a.Refresh(ctx))
	if v, _ := a.Get("/servers/1"); v != "B-addr" {
		t.Fatalf("after a's late refresh, put and exit, /servers/1 is %q", v)
	}
	for _, l := range a.Leases().List() {
		if l.Mine {
			t.Fatalf("a calls %+v its own", l)
		}
	}

	stopA := a.Leases().Keep(func(msg string) { t.Log("a:", msg) })
	defer stopA()
	for ; ; time.Sleep(50 * time.Millisecond) {
		ok(t, a.Refresh(ctx))
		if _, held := a.State().Lease("L"); !held {
			t.Logf("b's lease ended %s after b stopped", time.Since(stopped))
			break
		}
		if time.Since(stopped) > ttl+2*time.Second {
			t.Fatalf("a kept b's lease alive %s after b stopped", time.Since(stopped))
		}
	}
}

// expireAndRegisterAgain: b keeps leases until it has expired L, then
// registers L again with ttl, puts B-addr under it and dies (stops keeping
// leases, without revoking). It returns b's lease.
func expireAndRegisterAgain(t *testing.T, b *sharedconfig.Config, ttl time.Duration) lease.Lease {
	t.Helper()
	ctx := context.Background()
	stopB := b.Leases().Keep(func(msg string) { t.Log("b:", msg) })
	defer stopB()
	for end := time.Now().Add(5 * ttl); ; time.Sleep(50 * time.Millisecond) {
		ok(t, b.Refresh(ctx))
		if _, held := b.State().Lease("L"); !held {
			break // b's keeper expired it
		}
		if time.Now().After(end) {
			t.Fatal("b did not expire a's lease")
		}
	}
	_, err := b.Leases().Register(ctx, "L", ttl)
	ok(t, err)
	_, err = b.Put(ctx, "/servers/1", "B-addr", sharedconfig.WithLease("L"))
	ok(t, err)
	// b dies: its keeper stops before the lease is read, or a refresh of
	// its last round could land after.
	stopB()
	ok(t, b.Refresh(ctx))
	l, _ := b.State().Lease("L")
	return l
}
