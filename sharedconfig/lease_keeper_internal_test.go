package sharedconfig

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// The keeper refreshing a lease that this process revokes meanwhile (its
// round read the copy before the revocation) says nothing: the user ended
// it. It still tells, once, of a registration that ended otherwise: here,
// another process of the same writer registered the lease again.
func TestKeeperQuietAboutALeaseThisProcessRevoked(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, memlog.New("keeper"), Options{Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	k := keeper{c: c, warn: func(msg string) { warnings = append(warnings, msg) }, lastOK: map[string]time.Time{}, slow: map[string]bool{}, seen: map[string]leaseRecord{}, pulse: &pulse{}}
	for _, name := range []string{"L", "M"} {
		if _, err := c.Leases().Register(ctx, name, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	st := c.State() // the round's copy
	if _, err := c.Leases().Revoke(ctx, "L"); err != nil {
		t.Fatal(err)
	}
	l, _ := st.lease("L")
	k.refresh(ctx, "L", l)
	if len(warnings) != 0 {
		t.Fatalf("warned of a lease this process revoked: %q", warnings)
	}

	// Another process of the same writer registers M again: news.
	twin, err := Open(ctx, c.Log(), Options{Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := twin.Leases().Register(ctx, "M", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	m, _ := st.lease("M")
	k.refresh(ctx, "M", m)
	k.round(ctx)
	k.round(ctx)
	want := "Lease 'M' was registered again by another process of writer 'a'; this process no longer holds it"
	if len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("warnings %q, want only %q", warnings, want)
	}
	if l, _ := c.State().lease("M"); l.Registration == m.Registration || !l.heldUnder("a", l.Registration) {
		t.Fatalf("the keeper touched the new registration: %+v, was %+v", l, m)
	}
}

// The pulse takes a gap between beats of more than pulsePause for a time
// the process was not running, and nothing else.
func TestPulseNoticesAPause(t *testing.T) {
	p := &pulse{}
	p.beat()
	if p.pausedAt(time.Now().Add(-time.Millisecond)) {
		t.Fatal("a pause without a gap")
	}
	p.mu.Lock()
	p.last = time.Now().Add(-3 * time.Second) // the last beat before a stop
	p.mu.Unlock()
	if !p.pausedAt(time.Now().Add(-time.Second)) {
		t.Fatal("no pause a second ago, within a gap of 3s")
	}
	if p.pausedAt(time.Now().Add(-5*time.Second)) || p.pausedAt(time.Now().Add(time.Second)) {
		t.Fatal("a pause outside the gap")
	}
}

// stuckCompactions is a log on which, once stuck, no compaction gets
// through before its context ends, as under heavy contention.
type stuckCompactions struct {
	*memlog.Log
	stuck *atomic.Bool
}

func (l stuckCompactions) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	if !l.stuck.Load() {
		return l.Log.CompactAfter(ctx, last, snapshot)
	}
	<-ctx.Done()
	return statesync.Position{}, ctx.Err()
}

// A compaction that cannot get through holds back neither the keeper's
// refresh of a 1 s lease nor its next round past the next refresh: the
// keeper compacts after refreshing, only until a refresh is due again.
func TestKeeperRefreshDoesNotWaitForACompaction(t *testing.T) {
	ctx := context.Background()
	log := stuckCompactions{memlog.New("keeper"), &atomic.Bool{}}
	c, err := Open(ctx, log, CompactAt(Options{Holder: "a"}, 1))
	if err != nil {
		t.Fatal(err)
	}
	k := keeper{c: c, lastOK: map[string]time.Time{}, slow: map[string]bool{}, seen: map[string]leaseRecord{}, pulse: &pulse{}}
	if _, err := c.Leases().Register(ctx, "L", time.Second); err != nil {
		t.Fatal(err)
	}
	l, _ := c.State().lease("L")
	log.stuck.Store(true)
	began := time.Now()
	k.refresh(ctx, "L", l)
	if took := time.Since(began); took > 300*time.Millisecond {
		t.Fatalf("the refresh of a 1s lease took %s", took)
	}
	began = time.Now()
	k.round(ctx)
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Fatalf("a round took %s: the next refresh of a 1s lease is due a third of it after the last", took)
	}
}
