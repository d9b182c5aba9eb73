package sharedconfig_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// fakeClock is the server's clock in lease tests: it moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// leaseEnv is a memlog.Log whose entries carry a fake server time, and
// processes (configs) on it, each its own lease holder.
type leaseEnv struct {
	t     *testing.T
	log   *memlog.Log
	clock *fakeClock
}

func newLeaseEnv(t *testing.T) *leaseEnv {
	log := memlog.New("leases")
	clock := &fakeClock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	log.SetClock(clock.Now)
	return &leaseEnv{t: t, log: log, clock: clock}
}

func (e *leaseEnv) open(holder string) *sharedconfig.Config {
	e.t.Helper()
	c, err := sharedconfig.Open(context.Background(), e.log, sharedconfig.Options{Holder: holder})
	if err != nil {
		e.t.Fatal(err)
	}
	sharedconfig.SetServerClock(c, e.clock.Now)
	return c
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// membership: a holds lease "a" with /servers/1, b holds "b" with /servers/2.
func membership(t *testing.T, e *leaseEnv) (a, b *sharedconfig.Config) {
	ctx := context.Background()
	a, b = e.open("a"), e.open("b")
	_, err := a.Leases().Register(ctx, "a", 10*time.Second)
	ok(t, err)
	_, err = a.Put(ctx, "/servers/1", "one", sharedconfig.WithLease("a"))
	ok(t, err)
	_, err = b.Leases().Register(ctx, "b", 10*time.Second)
	ok(t, err)
	_, err = b.Put(ctx, "/servers/2", "two", sharedconfig.WithLease("b"))
	ok(t, err)
	return a, b
}

func keys(c *sharedconfig.Config) map[string]string {
	return maps.Collect(func(yield func(string, string) bool) {
		for k, p := range c.State().All() {
			if !yield(k, p.Value) {
				return
			}
		}
	})
}

func TestLeaseExpiresInOneEntryWithoutItsHolder(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, b := membership(t, e)
	_ = a         // a is "killed": it does nothing from here on
	for range 4 { // b stays alive; a does not refresh
		e.clock.Advance(3 * time.Second)
		_, err := b.Leases().Refresh(ctx, "b")
		ok(t, err)
		if _, err := sharedconfig.ExpireDue(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, held := b.State().Lease("a"); held {
		t.Fatal("lease a outlived its deadline by 2s")
	}
	if got := keys(b); len(got) != 1 || got["/servers/2"] != "two" {
		t.Fatalf("keys after a's expiry: %v", got)
	}
	// One entry ended the lease.
	late := e.open("c")
	hist, err := b.History(ctx, "", 100)
	ok(t, err)
	expiries := 0
	for _, ch := range hist {
		for _, op := range ch.Ops {
			if op.Kind == "expire_lease" && op.Lease == "a" {
				expiries++
			}
		}
	}
	if expiries != 1 {
		t.Fatalf("%d expire_lease entries for a, want 1", expiries)
	}
	if got := keys(late); len(got) != 1 {
		t.Fatalf("a process that joins later sees %v", got)
	}
}

func TestLeaseEndHeardByWatchers(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	var mu sync.Mutex
	var ended []lease.Ended
	w, err := sharedconfig.Open(ctx, e.log, sharedconfig.Options{Holder: "w"})
	ok(t, err)
	stop, err := w.Watch("", func(ch sharedconfig.Change) {
		mu.Lock()
		defer mu.Unlock()
		ended = append(ended, ch.Ended...)
	}, nil)
	ok(t, err)
	defer stop()
	sharedconfig.SetServerClock(w, e.clock.Now)
	a, b := membership(t, e)
	e.clock.Advance(6 * time.Second)
	_, err = b.Leases().Refresh(ctx, "b")
	ok(t, err)
	e.clock.Advance(5 * time.Second)
	ok(t, w.Refresh(ctx)) // catching up: the expiry is not written yet
	gone, err := sharedconfig.ExpireDue(ctx, w)
	ok(t, err)
	if len(gone) != 1 || gone[0] != "a" {
		t.Fatalf("ExpireDue ended %v, want [a]", gone)
	}
	_, err = b.Leases().Revoke(ctx, "b")
	ok(t, err)
	ok(t, w.Refresh(ctx))
	mu.Lock()
	defer mu.Unlock()
	if len(ended) != 2 || ended[0].Name != "a" || !ended[0].Expired || len(ended[0].Keys) != 1 || ended[0].Keys[0] != "/servers/1" ||
		ended[1].Name != "b" || ended[1].Expired || ended[1].Keys[0] != "/servers/2" {
		t.Fatalf("watchers heard %+v", ended)
	}
	// A key's History says which lease's end removed it, and how.
	for key, want := range map[string]lease.Ended{
		"/servers/1": {Name: "a", Keys: []string{"/servers/1"}, Expired: true},
		"/servers/2": {Name: "b", Keys: []string{"/servers/2"}},
	} {
		chs, err := w.History(ctx, key, 0)
		ok(t, err)
		last := chs[len(chs)-1]
		if len(last.Ops) != 1 || last.Ops[0] != (sharedconfig.Op{Kind: "remove", Key: key, Lease: want.Name}) ||
			len(last.Ended) != 1 || last.Ended[0].Name != want.Name || last.Ended[0].Expired != want.Expired || !slices.Equal(last.Ended[0].Keys, want.Keys) {
			t.Fatalf("History(Key: %s) ends with %+v, want its removal by %+v", key, last, want)
		}
	}
	ok(t, a.Refresh(ctx))
	if len(keys(a)) != 0 {
		t.Fatalf("a still sees %v", keys(a))
	}
}

func TestLateRefreshDoesNotRevive(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, b := membership(t, e)
	e.clock.Advance(6 * time.Second)
	_, err := b.Leases().Refresh(ctx, "b") // the log is alive in a's last half
	ok(t, err)
	e.clock.Advance(5 * time.Second) // a's deadline has passed
	_, err = a.Leases().Refresh(ctx, "a")
	if !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("late refresh: %v, want lease.ErrExpired", err)
	}
	_, err = a.Put(ctx, "/servers/1b", "x", sharedconfig.WithLease("a"))
	if !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("late put with lease: %v, want lease.ErrExpired", err)
	}
	_, err = sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	ok(t, a.Refresh(ctx))
	if _, held := a.State().Lease("a"); held {
		t.Fatal("the late refresh revived the lease")
	}
	if _, ok := a.Get("/servers/1"); ok {
		t.Fatal("the lease's key survived")
	}
}

// A refresh that lands after its lease's deadline says "expired", what its
// own entry did, even when another read of its process takes that entry in
// first together with a later expiry that ends the lease: it is judged by
// the state just after its entry, not a later one, where the lease is gone.
func TestLateRefreshJudgedAtItsEntry(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	log := &afterAppend{Log: e.log}
	a, err := sharedconfig.Open(ctx, log, sharedconfig.Options{Holder: "a"})
	ok(t, err)
	sharedconfig.SetServerClock(a, e.clock.Now)
	_, err = a.Leases().Register(ctx, "a", 10*time.Second)
	ok(t, err)
	b := e.open("b")
	_, err = b.Leases().Register(ctx, "b", 10*time.Second)
	ok(t, err)
	e.clock.Advance(6 * time.Second)
	_, err = b.Leases().Refresh(ctx, "b") // the log is alive in a's last half
	ok(t, err)
	e.clock.Advance(5 * time.Second) // a's deadline has passed
	log.then = func() {
		gone, err := sharedconfig.ExpireDue(ctx, b)
		if err != nil || len(gone) != 1 || gone[0] != "a" {
			t.Errorf("ExpireDue = %v, %v; want [a]", gone, err)
		}
		ok(t, a.Refresh(ctx)) // takes in the refresh and the expiry
	}
	if _, err := a.Leases().Refresh(ctx, "a"); !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("late refresh, taken in with the expiry after it: %v, want lease.ErrExpired", err)
	}
	if _, held := a.State().Lease("a"); held {
		t.Fatal("the expiry after the refresh did not end the lease")
	}
}

// afterAppend is a log that calls then, once, after an append lands and
// before the writer hears of it.
type afterAppend struct {
	*memlog.Log
	then func()
}

func (l *afterAppend) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	at, err := l.Log.AppendAfter(ctx, last, data)
	if then := l.then; then != nil && err == nil {
		l.then = nil
		then()
	}
	return at, err
}

// A refresh is appended unconditionally: from a stale copy it lands in one
// try, with no conflict; and once another process has ended the lease, a
// refresh from a copy that still shows it held is told that it ended, and
// revives nothing.
func TestRefreshFromAStaleCopy(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	var tries []statesync.Attempt
	a, err := sharedconfig.Open(ctx, e.log, sharedconfig.Options{Holder: "a", Trace: func(at statesync.Attempt) { tries = append(tries, at) }})
	ok(t, err)
	sharedconfig.SetServerClock(a, e.clock.Now)
	_, err = a.Leases().Register(ctx, "a", 10*time.Second)
	ok(t, err)
	b := e.open("b")
	_, err = b.Leases().Register(ctx, "b", 10*time.Second) // a's copy is behind
	ok(t, err)
	e.clock.Advance(4 * time.Second)
	tries = nil
	l, err := a.Leases().Refresh(ctx, "a")
	ok(t, err)
	if want := e.clock.Now().Add(10 * time.Second); !l.Deadline.Equal(want) {
		t.Fatalf("deadline after the refresh %v, want %v", l.Deadline, want)
	}
	if len(tries) != 1 || tries[0].Base != statesync.AnyRevision || tries[0].Conflict != nil {
		t.Fatalf("tries %+v, want one unconditional try", tries)
	}
	if _, held := a.State().Lease("b"); !held {
		t.Fatal("the refresh did not read up to its own entry")
	}

	e.clock.Advance(6 * time.Second)
	_, err = b.Leases().Refresh(ctx, "b") // the log is alive as a's deadline nears
	ok(t, err)
	e.clock.Advance(5 * time.Second)
	gone, err := sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	if len(gone) != 1 || gone[0] != "a" {
		t.Fatalf("ExpireDue ended %v, want [a]", gone)
	}
	if _, held := a.State().Lease("a"); !held {
		t.Fatal("a's copy should still be stale here")
	}
	if _, err := a.Leases().Refresh(ctx, "a"); !errors.Is(err, lease.ErrEnded) {
		t.Fatalf("refresh of an ended lease: %v, want lease.ErrEnded", err)
	}
	if _, held := a.State().Lease("a"); held {
		t.Fatal("the refresh revived an ended lease")
	}
}

func TestLeaseSurvivesSilence(t *testing.T) {
	// The server was down (or restarted) across the deadline: the log is
	// silent from the last refresh to after the deadline. Nothing expires
	// because of that: the first entry after the silence gives a fresh ttl.
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, _ := membership(t, e)
	other := e.open("other")
	e.clock.Advance(30 * time.Second)
	_, err := sharedconfig.ExpireDue(ctx, other)
	ok(t, err)
	if _, held := other.State().Lease("a"); !held {
		t.Fatal("a lease expired because the log was silent")
	}
	e.clock.Advance(1 * time.Second)
	_, err = a.Leases().Refresh(ctx, "a") // the holder, back after the outage
	ok(t, err)
	if v, _ := a.Get("/servers/1"); v != "one" {
		t.Fatal("the key went")
	}
	// The grace is one ttl: a holder that does not come back loses it.
	e.clock.Advance(7 * time.Second)
	_, err = sharedconfig.ExpireDue(ctx, other) // a witness for b: the log is alive
	ok(t, err)
	e.clock.Advance(5 * time.Second)
	_, err = sharedconfig.ExpireDue(ctx, other)
	ok(t, err)
	if _, held := other.State().Lease("b"); held {
		t.Fatal("b, not refreshed after the grace, still holds")
	}
	if l, held := other.State().Lease("a"); held {
		t.Log(describe(other.State()), l)
		t.Fatal("a, not refreshed after the grace, still holds")
	}
}

func TestLeaseReplaysAgree(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, b := membership(t, e)
	_, err := a.Put(ctx, "/plain", "p")
	ok(t, err)
	e.clock.Advance(6 * time.Second)
	_, err = b.Leases().Refresh(ctx, "b")
	ok(t, err)
	ok(t, b.Compact(ctx)) // the snapshot carries leases, keys' leases, the clock
	e.clock.Advance(5 * time.Second)
	_, err = a.Leases().Refresh(ctx, "a") // late: refused alike by both replays
	if !errors.Is(err, lease.ErrExpired) {
		t.Fatal(err)
	}
	joined := e.open("joined") // from the snapshot
	ok(t, a.Refresh(ctx))
	for _, c := range []*sharedconfig.Config{a, b, joined} {
		ok(t, c.Refresh(ctx))
	}
	want := describe(a.State())
	for _, c := range []*sharedconfig.Config{b, joined} {
		if got := describe(c.State()); got != want {
			t.Fatalf("replays disagree:\n%s\n%s", got, want)
		}
	}
	_, err = sharedconfig.ExpireDue(ctx, joined)
	ok(t, err)
	ok(t, a.Refresh(ctx))
	if _, held := a.State().Lease("a"); held {
		t.Fatal("a outlived its deadline after compaction")
	}
	if v, _ := a.Get("/plain"); v != "p" {
		t.Fatal("a plain key went with a lease")
	}
}

func describe(s sharedconfig.State) string {
	out := ""
	for k, p := range s.All() {
		out += k + "=" + p.Value + "@" + p.Lease + ";"
	}
	for n, l := range s.Leases() {
		out += n + ":" + l.Holder + "," + l.TTL.String() + "," + l.Deadline.UTC().String() + "," + fmt.Sprint(sharedconfig.Watched(s, n)) + ";"
	}
	return out
}

func TestStalePutIfAbsentAfterExpiry(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	_, b := membership(t, e)
	stale := e.open("stale") // has /servers/1 and will not refresh
	e.clock.Advance(6 * time.Second)
	_, err := b.Leases().Refresh(ctx, "b")
	ok(t, err)
	e.clock.Advance(5 * time.Second)
	_, err = sharedconfig.ExpireDue(ctx, b)
	ok(t, err)
	if _, ok := stale.Get("/servers/1"); !ok {
		t.Fatal("the stale copy was supposed to be stale")
	}
	_, existed, err := previous(stale.Put(ctx, "/servers/1", "new", sharedconfig.IfAbsent()))
	ok(t, err)
	if existed {
		t.Fatal("PUT_IF_ABSENT decided on the stale copy, where the expired key lives on")
	}
}

func TestLeaseErrorsAndDetach(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	a, b := membership(t, e)
	if _, err := b.Leases().Register(ctx, "a", time.Minute); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("register a lease another holds: %v", err)
	}
	if _, err := b.Leases().Refresh(ctx, "a"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("refresh a lease another holds: %v", err)
	}
	if _, err := b.Leases().Revoke(ctx, "a"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("revoke a lease another holds: %v", err)
	}
	if _, err := a.Leases().Refresh(ctx, "nope"); !errors.Is(err, lease.ErrUnknown) {
		t.Fatalf("refresh an unknown lease: %v", err)
	}
	if _, err := a.Put(ctx, "k", "v", sharedconfig.WithLease("nope")); !errors.Is(err, lease.ErrUnknown) {
		t.Fatalf("put with an unknown lease: %v", err)
	}
	if _, err := a.Leases().Register(ctx, "x", 10*time.Millisecond); !errors.Is(err, lease.ErrBadTTL) {
		t.Fatalf("a ttl under 1s: %v", err)
	}
	renewed, err := a.Leases().Register(ctx, "a", 20*time.Second)
	ok(t, err)
	if !renewed {
		t.Fatal("registering a held lease again did not renew it")
	}
	// A renewal with a shorter ttl is a renewal too, though its deadline
	// comes sooner.
	e.clock.Advance(time.Second)
	if renewed, err := a.Leases().Register(ctx, "a", 5*time.Second); err != nil || !renewed {
		t.Fatalf("renewing with a shorter ttl: %v, %v", renewed, err)
	}
	if l, _ := a.State().Lease("a"); l.TTL != 5*time.Second {
		t.Fatalf("the renewed lease has ttl %s", l.TTL)
	}
	// A plain put detaches the key; the lease's end leaves it.
	_, err = a.Put(ctx, "/servers/1", "kept")
	ok(t, err)
	keys, err := a.Leases().Revoke(ctx, "a")
	ok(t, err)
	if len(keys) != 0 {
		t.Fatalf("revoke removed %v", keys)
	}
	if v, _ := a.Get("/servers/1"); v != "kept" {
		t.Fatal("the detached key went with the lease")
	}
	_, err = b.Leases().RevokeHeld(ctx)
	ok(t, err)
	if _, ok := b.Get("/servers/2"); ok {
		t.Fatal("RevokeHeld left b's key")
	}
}

// A watch of a prefix sees a lease's end when it removed keys there, and
// not the lease's other entries.
func TestWatchSeesLeaseEndsUnderItsPrefix(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	w := e.open("w")
	got := make(chan sharedconfig.Change, 100)
	stop, err := w.Watch("/servers/", func(ch sharedconfig.Change) { got <- ch }, nil)
	ok(t, err)
	defer stop()
	a, b := membership(t, e)
	_, err = a.Put(ctx, "/tasks/1", "t", sharedconfig.WithLease("a"))
	ok(t, err)
	e.clock.Advance(time.Second)
	_, err = b.Leases().Refresh(ctx, "b")
	ok(t, err)
	keys, err := a.Leases().Revoke(ctx, "a")
	ok(t, err)
	if len(keys) != 2 {
		t.Fatalf("revoke removed %v", keys)
	}
	want := []string{"PUT /servers/1 = one", "PUT /servers/2 = two", "REVOKE_LEASE a"}
	for i := 0; i < len(want); {
		select {
		case ch := <-got:
			if len(ch.Ops) != 1 || ch.Ops[0].String() != want[i] {
				t.Fatalf("change %d: %+v, want %s", i, ch.Ops, want[i])
			}
			if i == 2 && (len(ch.Ended) != 1 || len(ch.Ended[0].Keys) != 1 || ch.Ended[0].Keys[0] != "/servers/1") {
				t.Fatalf("the revoke under the prefix: %+v", ch.Ended)
			}
			i++
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch heard %d changes of %d", i, len(want))
		}
	}
}

// A watcher writes its witness early enough that a clock estimate lagging
// by the age of the entry it opened on (a third of a ttl or more, for a
// process that just started) still lands it in the lease's last half: a
// 3s lease whose holder stopped is witnessed 1.05s before its deadline and
// expires at the deadline, instead of the late entry finding the log
// silent and granting it another ttl.
func TestWitnessLeavesRoomForALaggingClock(t *testing.T) {
	ctx := context.Background()
	e := newLeaseEnv(t)
	holder, watcher := e.open("holder"), e.open("watcher")
	_, err := holder.Leases().Register(ctx, "l", 3*time.Second)
	ok(t, err)
	ok(t, watcher.Refresh(ctx))
	e.clock.Advance(1950 * time.Millisecond)
	_, err = sharedconfig.ExpireDue(ctx, watcher)
	ok(t, err)
	before := watcher.State().Revision()
	e.clock.Advance(1100 * time.Millisecond) // past the deadline
	ended, err := sharedconfig.ExpireDue(ctx, watcher)
	ok(t, err)
	if !slices.Contains(ended, "l") {
		t.Fatalf("the lease lived past its deadline (revision %d, then %d): no witness 1.05s before it", before, watcher.State().Revision())
	}
}
