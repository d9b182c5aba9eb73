package sharedconfig_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// Two processes with the same --writer: one registered the lease and
// refreshes it; the other, whose copy still shows the old deadline when the
// lease dies (past its deadline, the log alive in its last half, no expiry
// written yet), did not register it, so it may not refresh it: it is told
// so and writes nothing, and the lease dies by its registrant's deadline.
func TestTwinRefreshOfARegistrationItDidNotMake(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a1, a2, b := e.open("a"), e.open("a"), e.open("b")
	_, err := a1.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	ok(t, a2.Refresh(ctx)) // a2 sees the first deadline
	e.clock.Advance(4 * time.Second)
	_, err = a1.Leases().Refresh(ctx, "L") // a2 does not see this one
	ok(t, err)
	e.clock.Advance(6 * time.Second)
	_, err = b.Leases().Register(ctx, "b", 10*time.Second) // the log is alive in L's last half
	ok(t, err)
	e.clock.Advance(5 * time.Second) // L is past its deadline; nobody expired it yet
	rev := b.State().Revision()
	if _, err := a2.Leases().Refresh(ctx, "L"); !errors.Is(err, lease.ErrNotMine) {
		t.Fatalf("a twin's refresh: %v, want lease.ErrNotMine", err)
	}
	if a2.State().Revision() != rev {
		t.Fatalf("a twin's refused refresh wrote: the log is at %d, was %d", a2.State().Revision(), rev)
	}
	gone, err := sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	if len(gone) != 1 || gone[0] != "L" {
		t.Fatalf("ExpireDue ended %v, want [L]", gone)
	}
}

// The same with one holder: after an outage another process's expiry gave
// the lease a ttl of grace, which the holder (stalled, its copy stale)
// missed; its refresh after the grace ran out renews nothing.
func TestLateRefreshAfterAGraceItMissed(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, other := e.open("a"), e.open("other")
	_, err := a.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	ok(t, other.Refresh(ctx))
	e.clock.Advance(30 * time.Second)           // silence
	_, err = sharedconfig.ExpireDue(ctx, other) // grace: a fresh ttl
	ok(t, err)
	if _, held := other.State().Lease("L"); !held {
		t.Fatal("no grace after the silence")
	}
	e.clock.Advance(8 * time.Second)
	_, err = sharedconfig.ExpireDue(ctx, other) // a witness: the log is alive as the grace ends
	ok(t, err)
	e.clock.Advance(3 * time.Second)
	if _, err := a.Leases().Refresh(ctx, "L"); !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("a refresh after the grace ran out: %v, want lease.ErrExpired", err)
	}
}

// A refresh from a copy that shows the lease held under this process's
// registration, landing after another process of the same --writer
// registered it again and revoked it, says the lease ended (not that it is
// past its deadline: it was not) and revives nothing.
func TestRefreshAfterATwinRevoked(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a1, a2 := e.open("a"), e.open("a")
	_, err := a1.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	_, err = a2.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	_, err = a2.Leases().Revoke(ctx, "L")
	ok(t, err)
	if _, err := a1.Leases().Refresh(ctx, "L"); !errors.Is(err, lease.ErrEnded) || errors.Is(err, lease.ErrExpired) {
		t.Fatalf("a refresh of a revoked lease: %v, want lease.ErrEnded", err)
	}
	if _, held := a1.State().Lease("L"); held {
		t.Fatal("the refresh revived a revoked lease")
	}
}

// A refresh from a stale copy, landing after the lease expired and another
// writer registered it again, says who holds it now and leaves it alone.
func TestRefreshOfALeaseNowAnothers(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, b := e.open("a"), e.open("b")
	_, err := a.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	ok(t, b.Refresh(ctx))
	e.clock.Advance(8 * time.Second)
	_, err = sharedconfig.ExpireDue(ctx, b) // a witness
	ok(t, err)
	e.clock.Advance(3 * time.Second)
	gone, err := sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	if len(gone) != 1 {
		t.Fatalf("ExpireDue ended %v, want [L]", gone)
	}
	_, err = b.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	mine, _ := b.State().Lease("L")
	if _, err := a.Leases().Refresh(ctx, "L"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("a refresh of a lease another writer holds now: %v, want lease.ErrHeld", err)
	}
	ok(t, b.Refresh(ctx))
	if l, _ := b.State().Lease("L"); l != mine {
		t.Fatalf("the refresh changed another writer's lease: %+v, was %+v", l, mine)
	}
}

// compactingLog is a memlog.Log on which another process compacts right after
// the first unconditional append lands, before its writer reads it back.
type compactingLog struct {
	*memlog.Log
	once    sync.Once
	compact func()
}

func (l *compactingLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	at, err := l.Log.AppendAfter(ctx, last, data)
	if err == nil && last.Revision == statesync.AnyRevision {
		l.once.Do(l.compact)
	}
	return at, err
}

// A refresh from a stale copy whose entry a compaction covered before the
// refresh read it back learns its outcome from the snapshot.
func TestRefreshWhoseEntryACompactionCovered(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	b := e.open("b")
	compacted := false
	log := &compactingLog{Log: e.log, compact: func() {
		ok(t, b.Refresh(ctx))
		ok(t, b.Compact(ctx))
		compacted = true
	}}
	a, err := sharedconfig.Open(ctx, log, sharedconfig.Options{Holder: "a"})
	ok(t, err)
	sharedconfig.SetServerClock(a, e.clock.Now)
	_, err = a.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	_, err = b.Put(ctx, "other", "x") // a's copy is behind
	ok(t, err)
	e.clock.Advance(4 * time.Second)
	l, err := a.Leases().Refresh(ctx, "L")
	ok(t, err)
	if !compacted {
		t.Fatal("no compaction came between the refresh and its read back")
	}
	if want := e.clock.Now().Add(10 * time.Second); !l.Deadline.Equal(want) {
		t.Fatalf("deadline %v, want %v", l.Deadline, want)
	}
	if v, _ := a.Get("other"); v != "x" {
		t.Fatal("the read back did not take in the snapshot")
	}
}

// A process keeps alive, and revokes on a clean exit, only the leases it
// registered: not those another process of the same --writer registered (a
// piped one-liner with that --writer revoked a running shell's lease as it
// ended, and a watch with it kept a dead holder's lease alive).
func TestTwinLeavesTheLeaseItDidNotRegister(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	shell, twin := e.open("server-1"), e.open("server-1")
	_, err := shell.Leases().Register(ctx, "L", 10*time.Second)
	ok(t, err)
	_, err = shell.Put(ctx, "/servers/1", "up", sharedconfig.WithLease("L"))
	ok(t, err)
	_, err = twin.Leases().Register(ctx, "M", 10*time.Second) // the twin's own
	ok(t, err)

	e.clock.Advance(8 * time.Second) // both are due for a refresh
	before, _ := twin.State().Lease("L")
	first, _ := twin.State().Lease("M")
	stop := twin.Leases().Keep(func(msg string) { t.Log("twin:", msg) })
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m, _ := twin.State().Lease("M"); !m.Deadline.Equal(first.Deadline) {
			break // refreshed; a refresh of L came first, in the same round
		}
		if time.Now().After(end) {
			t.Fatal("the twin's keeper did not refresh its own lease")
		}
	}
	stop()
	if l, _ := twin.State().Lease("L"); !l.Deadline.Equal(before.Deadline) {
		t.Fatalf("the twin's keeper refreshed a lease it did not register: deadline %v, was %v", l.Deadline, before.Deadline)
	}

	_, err = twin.Leases().RevokeHeld(ctx) // the twin's clean exit
	ok(t, err)
	ok(t, shell.Refresh(ctx))
	if v, _ := shell.Get("/servers/1"); v != "up" {
		t.Fatal("the twin's exit revoked the shell's lease")
	}
	if _, held := shell.State().Lease("M"); held {
		t.Fatal("the twin's exit left its own lease")
	}
	_, err = shell.Leases().RevokeHeld(ctx)
	ok(t, err)
	if _, held := shell.State().Lease("L"); held {
		t.Fatal("the shell's exit left its lease")
	}
}
