package sharedconfig_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// gatedLog holds up its next append, once armed, until released: a write
// that waits (for its turn among many writers, say) while the log moves on.
type gatedLog struct {
	*memlog.Log
	armed   atomic.Bool
	held    chan struct{} // closed when an append is held up
	release chan struct{}
}

// arm holds up the next append.
func (g *gatedLog) arm() {
	g.held, g.release = make(chan struct{}), make(chan struct{})
	g.armed.Store(true)
}

func (g *gatedLog) hold() {
	if g.armed.CompareAndSwap(true, false) {
		close(g.held)
		<-g.release
	}
}

func (g *gatedLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	g.hold()
	return g.Log.AppendAfter(ctx, last, data)
}

// fallDue has b see lease name, registered at the clock's time with a 2s
// ttl, fall due: a witness before its deadline, then the expiry.
func fallDue(t *testing.T, e *leaseEnv, b *sharedconfig.Config, name string) {
	t.Helper()
	ctx := context.Background()
	ok(t, b.Refresh(ctx))
	e.clock.Advance(1600 * time.Millisecond)
	_, err := sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	e.clock.Advance(time.Second)
	ended, err := sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	if !slices.Contains(ended, name) {
		t.Fatalf("b's expiries ended %q, not %s", ended, name)
	}
}

// A process that quits stops keeping its leases alive, then revokes them.
// A revocation held up past the lease's deadline (among 16 writers, waiting
// for its turn) finds the lease expired: it ended because this process was
// ending it, which is no news to tell. A lease that another process of the
// same writer registered again meanwhile, or that had ended before the
// process began to revoke it, is news, and is told.
func TestRevokeHeldQuietAboutALeaseThatExpiresWhileRevoked(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	gate := &gatedLog{Log: e.log}
	a, err := sharedconfig.Open(ctx, gate, sharedconfig.Options{Holder: "a"})
	ok(t, err)
	sharedconfig.SetServerClock(a, e.clock.Now)
	b := e.open("b")
	_, err = a.Leases().Register(ctx, "L", 2*time.Second)
	ok(t, err)
	_, err = a.Put(ctx, "k", "v", sharedconfig.WithLease("L"))
	ok(t, err)

	lost := revokeHeldHeldUp(t, a, gate, func() { fallDue(t, e, b, "L") })
	for _, l := range lost {
		t.Errorf("RevokeHeld told of a lease that expired while it revoked it: %s", l)
	}
	if _, ok := a.Get("k"); ok {
		t.Fatal("the key under the lease outlived it")
	}

	// Another process of the same writer registers N again while a
	// revokes it: that is told (N lives on, with its keys).
	twin := e.open("a")
	_, err = a.Leases().Register(ctx, "N", 2*time.Second)
	ok(t, err)
	_, err = a.Put(ctx, "n", "v", sharedconfig.WithLease("N"))
	ok(t, err)
	lost = revokeHeldHeldUp(t, a, gate, func() {
		ok(t, twin.Refresh(ctx))
		_, err := twin.Leases().Register(ctx, "N", 2*time.Second)
		ok(t, err)
	})
	want := "Lease 'N' was registered again by another process of writer 'a'; this process no longer holds it"
	if len(lost) != 1 || lost[0].String() != want {
		t.Fatalf("RevokeHeld told %q, want %q", lost, want)
	}
	if _, ok := a.Get("n"); !ok {
		t.Fatal("the key under the lease registered again went")
	}

	// M ends before a begins to revoke it (a's copy, not refreshed, still
	// shows it held): that is told.
	_, err = a.Leases().Register(ctx, "M", 2*time.Second)
	ok(t, err)
	fallDue(t, e, b, "M")
	lost, err = a.Leases().RevokeHeld(ctx)
	ok(t, err)
	want = "Lease 'M' has ended (it expired or was revoked); it is no longer held"
	if len(lost) != 1 || lost[0].String() != want {
		t.Fatalf("RevokeHeld told %q, want %q", lost, want)
	}
}

// revokeHeldHeldUp runs a's RevokeHeld with its revocation's append held
// up while meanwhile runs, and returns what it told.
func revokeHeldHeldUp(t *testing.T, a *sharedconfig.Config, gate *gatedLog, meanwhile func()) []lease.Lost {
	t.Helper()
	type result struct {
		lost []lease.Lost
		err  error
	}
	done := make(chan result, 1)
	gate.arm()
	go func() {
		lost, err := a.Leases().RevokeHeld(context.Background())
		done <- result{lost, err}
	}()
	<-gate.held
	meanwhile()
	close(gate.release)
	r := <-done
	ok(t, r.err)
	return r.lost
}
