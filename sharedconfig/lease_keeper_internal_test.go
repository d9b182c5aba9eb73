package sharedconfig

import (
	"context"
	"fmt"
	"sync"
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
	c, err := Open(ctx, log, Options{Holder: "a", CompactionPolicy: &CompactionPolicy{MaxEntries: 1}})
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

// testClock is a settable clock, the log's and the server's alike.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// heldAppends is a log whose next append, once armed, waits until released.
type heldAppends struct {
	*memlog.Log
	armed   atomic.Bool
	held    chan struct{} // closed when an append waits
	release chan struct{}
}

func (l *heldAppends) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	if l.armed.CompareAndSwap(true, false) {
		close(l.held)
		<-l.release
	}
	return l.Log.AppendAfter(ctx, last, data)
}

// A lease that this process revokes (REVOKE_LEASE) is kept alive until the
// revocation lands: one held up (for its turn among many writers, say) past
// the lease's deadline finds the lease still live, and revokes it, rather
// than finding it expired by another process meanwhile.
func TestKeeperKeepsALeaseAliveWhileItIsRevoked(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	log := &heldAppends{Log: memlog.New("revoking")}
	log.SetClock(clock.Now)
	a, b := openOnClock(t, log, clock, "a"), openOnClock(t, log, clock, "b")
	var warnings []string
	k := keeper{c: a, warn: func(msg string) { warnings = append(warnings, msg) }, lastOK: map[string]time.Time{}, slow: map[string]bool{}, seen: map[string]leaseRecord{}, pulse: &pulse{}}
	if _, err := a.Leases().Register(ctx, "L", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "k", "v", WithLease("L")); err != nil {
		t.Fatal(err)
	}
	log.held, log.release = make(chan struct{}), make(chan struct{})
	log.armed.Store(true)
	revoked := make(chan error, 1)
	go func() {
		keys, err := a.Leases().Revoke(ctx, "L")
		if err == nil && (len(keys) != 1 || keys[0] != "k") {
			err = fmt.Errorf("removed %q, want k", keys)
		}
		revoked <- err
	}()
	<-log.held
	// The revocation is held up. A third of the ttl on, the keeper's round
	// refreshes the lease (its refresh lands; reading it back waits for
	// the revocation).
	clock.advance(800 * time.Millisecond)
	before := logEnd(t, log)
	rounded := make(chan struct{})
	go func() {
		defer close(rounded)
		k.round(ctx)
	}()
	for end := time.Now().Add(5 * time.Second); logEnd(t, log) == before && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	// b writes what falls due, past the lease's first deadline (2s).
	for range 2 {
		clock.advance(800 * time.Millisecond)
		if err := b.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.expireDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(log.release)
	if err := <-revoked; err != nil {
		t.Fatalf("the revocation, held up past the lease's first deadline: %v; want it to find the lease live and revoke it", err)
	}
	<-rounded
	k.round(ctx)
	if len(warnings) != 0 {
		t.Fatalf("the keeper warned of a lease this process revoked: %q", warnings)
	}
}

// openOnClock opens a config on log for holder, whose server's clock is
// clock, as the log's is.
func openOnClock(t *testing.T, log statesync.Log, clock *testClock, holder string) *Config {
	t.Helper()
	c, err := Open(context.Background(), log, Options{Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	c.leases.clock = clock.Now
	return c
}

func logEnd(t *testing.T, log statesync.Log) uint64 {
	t.Helper()
	at, err := log.LastPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return at.Revision
}
