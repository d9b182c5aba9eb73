package sharedconfig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A server down for longer than a lease's ttl does not expire it: the
// holder, alive all along, keeps it once the server is back, although
// another process writes an expiry first. Deadlines are server timestamps;
// the first entry after the silence gives a fresh ttl rather than judging a
// deadline nobody could meet.
func TestLeaseSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	srv := jstest.ServerAt(t, dir, "127.0.0.1:0")
	listen := strings.TrimPrefix(srv.ClientURL(), "nats://")
	holderConn := jstest.Connect(t, srv)
	holder := openOn(t, holderConn, "lease-restart", sharedconfig.Options{Holder: "holder"})
	other := openOn(t, jstest.Connect(t, srv), "lease-restart", sharedconfig.Options{Holder: "other"})
	const ttl = 5 * time.Second
	if _, err := holder.Leases().Register(ctx, "member", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Put(ctx, "/servers/1", "up", sharedconfig.WithLease("member")); err != nil {
		t.Fatal(err)
	}
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	time.Sleep(ttl + time.Second) // the outage: longer than the ttl
	jstest.ServerAt(t, dir, listen)

	// Another process, back first, writes the expiry it believes is due.
	opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := sharedconfig.ExpireDue(opCtx, other)
		if err == nil {
			break
		}
		if opCtx.Err() != nil {
			t.Fatalf("no expiry could be written after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, ok := other.State().Lease("member"); !ok {
		t.Fatal("the lease ended because the server was down")
	}
	// The holder, alive all along, refreshes and keeps its key, once it has
	// reconnected (a write is not sent before).
	waitConnected(opCtx, t, holderConn)
	if _, err := holder.Leases().Refresh(opCtx, "member"); err != nil {
		t.Fatalf("the holder's refresh after the restart: %v", err)
	}
	if err := other.Refresh(opCtx); err != nil {
		t.Fatal(err)
	}
	if v, ok := other.Get("/servers/1"); !ok || v != "up" {
		t.Fatal("the key of a live holder went with the restart")
	}
}

// A holder that cannot reach the server for longer than its lease's ttl
// hears, once, that the lease may have expired.
func TestKeeperWarnsWhenItCannotRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := jstest.Server(t)
	holder := openOn(t, jstest.Connect(t, srv), "lease-warn", sharedconfig.Options{Holder: "holder"})
	if _, err := holder.Leases().Register(ctx, "member", time.Second); err != nil {
		t.Fatal(err)
	}
	warned := make(chan string, 10)
	stop := holder.Leases().Keep(func(msg string) { warned <- msg })
	defer stop()
	srv.Shutdown()
	select {
	case msg := <-warned:
		if !strings.Contains(msg, "Lease 'member' could not be refreshed for more than its ttl of 1s: it may have expired") {
			t.Fatalf("the warning: %s", msg)
		}
	case <-time.After(time.Minute):
		t.Fatal("no warning within a minute of losing the server")
	}
	select {
	case msg := <-warned:
		t.Fatalf("warned twice: %s", msg)
	case <-time.After(2 * time.Second):
	}
}
