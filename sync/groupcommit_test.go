package statesync_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// gateLog holds the next append until the test releases it, and can let a
// rival writer append just before appends, so that tests decide what is in
// flight and what conflicts.
type gateLog struct {
	*memlog.Log
	gated   atomic.Bool   // the next append waits
	entered chan struct{} // an append is held
	release chan struct{}
	rivals  atomic.Int64 // appends, after the held one, that a rival's entry goes just before
	appends atomic.Int64 // appends tried
}

func newGateLog() *gateLog {
	return &gateLog{Log: memlog.New("t"), entered: make(chan struct{}), release: make(chan struct{})}
}

func (l *gateLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	l.beforeAppend()
	return l.Log.AppendAfter(ctx, last, data)
}

// beforeAppend holds the append if the gate is shut, or lets a rival in.
func (l *gateLog) beforeAppend() {
	l.appends.Add(1)
	if l.gated.CompareAndSwap(true, false) {
		l.entered <- struct{}{}
		<-l.release
		return
	}
	if l.rivals.Add(-1) >= 0 {
		l.AppendRaw([]byte(`{"add":[100]}`), false)
	}
}

// waitFor polls cond until it holds, failing the test after a long while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// call is one UpdateState call made in the background.
type call struct {
	saw  counter
	err  error
	runs int
	done chan struct{}
}

// holdOne starts an increment through s whose append the log holds, and
// returns a function that releases it and waits for it.
func holdOne(t *testing.T, log *gateLog, s *statesync.Synchronizer[counter]) func() {
	t.Helper()
	log.gated.Store(true)
	first := make(chan error, 1)
	go func() {
		_, err := increment(context.Background(), s)
		first <- err
	}()
	<-log.entered
	return func() {
		t.Helper()
		log.release <- struct{}{}
		if err := <-first; err != nil {
			t.Fatalf("the held write: %v", err)
		}
	}
}

// queue starts fn as an UpdateState call on s, once the calls before it are
// queued behind the held append, so that the calls queue in order.
func queue(t *testing.T, ctx context.Context, s *statesync.Synchronizer[counter], fn func(counter) []statesync.Update[counter]) *call {
	t.Helper()
	before := statesync.Queued(s)
	c := &call{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.saw, _, c.err = statesync.UpdateState(ctx, s, func(v counter) ([]statesync.Update[counter], counter) {
			c.runs++
			return fn(v), v
		})
	}()
	waitFor(t, "the call is queued", func() bool { return statesync.Queued(s) == before+1 })
	return c
}

func adding(n int64) func(counter) []statesync.Update[counter] {
	return func(counter) []statesync.Update[counter] { return []statesync.Update[counter]{add{N: n}} }
}

// entrySizes is how many updates each entry after revision after holds.
func entrySizes(t *testing.T, log statesync.Log, after uint64) []int {
	t.Helper()
	var sizes []int
	last, _ := logtest.LastRevision(log, context.Background())
	err := logtest.Read(log, context.Background(), after, last, func(e statesync.Entry) error {
		us, err := counterCodec.DecodeUpdates(e.Data)
		sizes = append(sizes, len(us))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}

// Calls that queue while an append is in flight land as one entry; each
// function sees what the calls before it added, and each call gets its own
// result.
func TestQueuedCallsCommitAsOneEntry(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	ctx := context.Background()
	releaseFirst := holdOne(t, log, s)
	b := queue(t, ctx, s, adding(1))
	c := queue(t, ctx, s, adding(10))
	d := queue(t, ctx, s, adding(100))
	releaseFirst()
	for _, x := range []*call{b, c, d} {
		<-x.done
		if x.err != nil {
			t.Fatal(x.err)
		}
	}
	if b.saw != 1 || c.saw != 2 || d.saw != 12 {
		t.Fatalf("the calls saw %d, %d, %d; want 1, 2, 12: each sees its predecessors' updates", b.saw, c.saw, d.saw)
	}
	if got := entrySizes(t, log, 1); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("entries after the initial state hold %v updates; want [1 3]: the queued calls as one entry", got)
	}
	if v := value(t, s); v != 112 {
		t.Fatalf("counter = %d, want 112", v)
	}
}

// A batch that conflicts catches up and runs every function again, in order,
// each on the fresh state and its predecessors' updates.
func TestBatchRerunsOnConflict(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	ctx := context.Background()
	releaseFirst := holdOne(t, log, s)
	b := queue(t, ctx, s, adding(1))
	c := queue(t, ctx, s, adding(10))
	log.rivals.Store(1) // a rival's +100 lands just before the batch's append
	releaseFirst()
	<-b.done
	<-c.done
	if b.err != nil || c.err != nil {
		t.Fatal(b.err, c.err)
	}
	if b.runs != 2 || c.runs != 2 || b.saw != 101 || c.saw != 102 {
		t.Fatalf("runs %d and %d, saw %d and %d; want each run twice, the second time seeing 101 and 102", b.runs, c.runs, b.saw, c.saw)
	}
	if v := value(t, s); v != 112 {
		t.Fatalf("counter = %d, want 112", v)
	}
}

// unencodable is an update the counter's codec refuses.
type unencodable struct{}

func (unencodable) Apply(c counter, _ uint64) counter { return c }

// One call's bad update fails that call alone; the others land.
func TestBatchErrorsArePerCall(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	ctx := context.Background()
	releaseFirst := holdOne(t, log, s)
	b := queue(t, ctx, s, adding(1))
	bad := queue(t, ctx, s, func(counter) []statesync.Update[counter] { return []statesync.Update[counter]{unencodable{}} })
	d := queue(t, ctx, s, adding(100))
	releaseFirst()
	for _, x := range []*call{b, bad, d} {
		<-x.done
	}
	if b.err != nil || d.err != nil || bad.err == nil {
		t.Fatalf("errors %v, %v, %v; want only the unencodable call to fail", b.err, bad.err, d.err)
	}
	if v := value(t, s); v != 102 {
		t.Fatalf("counter = %d, want 102", v)
	}
}

// A call whose function writes nothing gets its answer from the batch's
// append, which shows that the state it decided on was the latest.
func TestBatchedDecisionToWriteNothing(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	ctx := context.Background()
	releaseFirst := holdOne(t, log, s)
	onlyIfZero := func(c counter) []statesync.Update[counter] {
		if c != 0 {
			return nil
		}
		return []statesync.Update[counter]{add{N: 1}}
	}
	b := queue(t, ctx, s, onlyIfZero)
	c := queue(t, ctx, s, adding(10))
	releaseFirst()
	<-b.done
	<-c.done
	if b.err != nil || c.err != nil || b.saw != 1 || c.saw != 1 {
		t.Fatalf("b: %v saw %d; c: %v saw %d; want both to succeed on the value 1", b.err, b.saw, c.err, c.saw)
	}
	if got := entrySizes(t, log, 1); len(got) != 2 || got[1] != 1 {
		t.Fatalf("entries hold %v updates; want [1 1]", got)
	}

	// A batch in which nobody writes writes nothing, and answers.
	releaseFirst = holdOne(t, log, s)
	d := queue(t, ctx, s, onlyIfZero)
	e := queue(t, ctx, s, onlyIfZero)
	releaseFirst()
	<-d.done
	<-e.done
	if d.err != nil || e.err != nil || d.saw != 12 || e.saw != 12 {
		t.Fatalf("d: %v saw %d; e: %v saw %d; want both to answer on 12", d.err, d.saw, e.err, e.saw)
	}
	if got := entrySizes(t, log, 1); len(got) != 3 {
		t.Fatalf("entries hold %v updates; want 3 entries: the batch of no updates wrote nothing", got)
	}
}

// A call whose context ends while it waits leaves without being tried; one
// whose context ends while its batch retries leaves at the next try, with a
// ContendedError; the rest of the batch lands.
func TestCancelledCallLeavesTheBatch(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	ctx := context.Background()
	releaseFirst := holdOne(t, log, s)
	waiting, cancelWaiting := context.WithCancel(ctx)
	w := queue(t, waiting, s, adding(1000))
	cancelWaiting()
	<-w.done
	if !errors.Is(w.err, context.Canceled) || w.runs != 0 {
		t.Fatalf("a call cancelled while queued: %v after %d runs; want context.Canceled, never run", w.err, w.runs)
	}
	var contended *turns.ContendedError
	if errors.As(w.err, &contended) {
		t.Fatalf("a call that never tried is called contended: %v", w.err)
	}

	leaving, cancelLeaving := context.WithCancel(ctx)
	defer cancelLeaving()
	b := queue(t, ctx, s, adding(1))
	c := queue(t, leaving, s, func(counter) []statesync.Update[counter] {
		cancelLeaving() // ends while its batch's first try is under way
		return []statesync.Update[counter]{add{N: 10}}
	})
	log.rivals.Store(1) // the first try loses
	releaseFirst()
	<-b.done
	<-c.done
	if b.err != nil {
		t.Fatalf("the call that stayed: %v", b.err)
	}
	if !errors.As(c.err, &contended) || contended.Lost != 1 || !errors.Is(c.err, context.Canceled) {
		t.Fatalf("the call that left: %v; want a ContendedError after 1 lost try, wrapping context.Canceled", c.err)
	}
	if v := value(t, s); v != 102 {
		t.Fatalf("counter = %d, want 102: the first write, the rival's 100 and b's 1", v)
	}
}

// When every call of a batch runs out of time losing, each says so with a
// ContendedError that wraps its own context's error.
func TestStarvedBatchIsContended(t *testing.T) {
	log := newGateLog()
	conflicts := 0
	var mu sync.Mutex
	s := newCounter(t, log, statesync.WithTrace(func(a statesync.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		if a.Conflict != nil {
			conflicts++
		}
	}))
	releaseFirst := holdOne(t, log, s)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	b := queue(t, short, s, adding(1))
	c := queue(t, short, s, adding(10))
	log.rivals.Store(1 << 40) // every later append loses
	releaseFirst()
	<-b.done
	<-c.done
	mu.Lock()
	defer mu.Unlock()
	for _, x := range []*call{b, c} {
		var contended *turns.ContendedError
		if !errors.As(x.err, &contended) || !errors.Is(x.err, context.DeadlineExceeded) || contended.Lost < 1 || contended.Lost != conflicts {
			t.Fatalf("a starved batched call: %v; want a ContendedError after the %d conflicts traced, wrapping the deadline", x.err, conflicts)
		}
	}
}

// Many goroutines on one synchronizer lose nothing, and share appends.
func TestConcurrentCallsOnOneSynchronizer(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	const callers, each = 16, 50
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				if _, err := increment(context.Background(), s); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v := value(t, newCounter(t, log)); v != callers*each {
		t.Fatalf("counter = %d, want %d", v, callers*each)
	}
}

// A caller that recovers from a panic in its own function leaves the
// synchronizer usable.
func TestPanickingFunctionLeavesTheSynchronizerUsable(t *testing.T) {
	s := newCounter(t, memlog.New("t"))
	func() {
		defer func() { _ = recover() }()
		statesync.UpdateState(context.Background(), s, func(counter) ([]statesync.Update[counter], int) { panic("boom") })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := increment(ctx, s); err != nil {
		t.Fatalf("a write after a recovered panic: %v", err)
	}
}

// Each call of a batch gets the state just after its own updates, not the
// state after the whole entry (which holds the updates of the calls after
// it): a caller judges what its own change did on it.
func TestBatchedCallsGetTheStateAfterTheirOwnUpdates(t *testing.T) {
	log := newGateLog()
	s := newCounter(t, log)
	ctx := context.Background()
	releaseFirst := holdOne(t, log, s)
	afters := make([]chan counter, 2)
	for i, n := range []int64{1, 10} {
		afters[i] = make(chan counter, 1)
		before := statesync.Queued(s)
		go func() {
			_, after, err := statesync.UpdateState(ctx, s, func(counter) ([]statesync.Update[counter], struct{}) {
				return []statesync.Update[counter]{add{N: n}}, struct{}{}
			})
			if err != nil {
				t.Error(err)
			}
			afters[i] <- after
		}()
		waitFor(t, "the call is queued", func() bool { return statesync.Queued(s) == before+1 })
	}
	releaseFirst()
	first, second := <-afters[0], <-afters[1]
	// The initial entry, the held call's, and the batch's: one entry.
	if last := lastRevision(t, log); first != 2 || second != 12 || last != 3 {
		t.Fatalf("the batched calls got %d and %d, the log ends at %d; want 2 and 12, in one entry at 3", first, second, last)
	}
}

// In a batch, a timed update is applied at the time the log stored the
// entry for the caller's state after it, and at the local clock's time (an
// estimate, never the zero time) for the calls after it to decide on.
func TestBatchedTimedUpdatesGetTheEntrysTime(t *testing.T) {
	ctx := context.Background()
	log := &gateLog{Log: memlog.New("timed"), entered: make(chan struct{}), release: make(chan struct{})}
	logTime := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	log.SetClock(func() time.Time { return logTime })
	s := statesync.New[stamped](log, stampCodec{})
	if err := s.Initialize(ctx, stampStart{}); err != nil {
		t.Fatal(err)
	}
	log.gated.Store(true)
	held := make(chan error, 1)
	go func() {
		_, _, err := statesync.UpdateState(ctx, s, func(stamped) ([]statesync.Update[stamped], struct{}) {
			return []statesync.Update[stamped]{plain{}}, struct{}{}
		})
		held <- err
	}()
	<-log.entered
	type result struct {
		saw, after stamped
	}
	results := make([]chan result, 2)
	for i, u := range []statesync.Update[stamped]{stamp{}, plain{}} {
		results[i] = make(chan result, 1)
		before := statesync.Queued(s)
		go func() {
			var saw stamped
			_, after, err := statesync.UpdateState(ctx, s, func(st stamped) ([]statesync.Update[stamped], struct{}) {
				saw = st
				return []statesync.Update[stamped]{u}, struct{}{}
			})
			if err != nil {
				t.Error(err)
			}
			results[i] <- result{saw, after}
		}()
		waitFor(t, "the call is queued", func() bool { return statesync.Queued(s) == before+1 })
	}
	log.release <- struct{}{}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	stamper, next := <-results[0], <-results[1]
	if !stamper.after.at.Equal(logTime) || stamper.after.count != 2 {
		t.Errorf("the stamping call's state after it: %+v; want the log's time %v and count 2", stamper.after, logTime)
	}
	if next.saw.at.IsZero() || next.saw.count != 2 {
		t.Errorf("the next call decided on %+v; want the stamp applied at an estimate of the time, count 2", next.saw)
	}
	if !next.after.at.Equal(logTime) || next.after.count != 3 {
		t.Errorf("the next call's state after it: %+v; want the log's time and count 3", next.after)
	}
}

// Calls each started once the one before is queued (WithQueued) run in the
// order they were started, each on the state its predecessors left, with
// nothing holding an append to make them queue: a script's lines,
// pipelined.
func TestCallsStartedOnceQueuedRunInOrder(t *testing.T) {
	log := memlog.New("t")
	s := newCounter(t, log)
	const n = 200
	saw := make([]counter, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		queued := make(chan struct{})
		ctx := statesync.WithQueued(context.Background(), func() { close(queued) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			saw[i], _, errs[i] = statesync.UpdateState(ctx, s, func(v counter) ([]statesync.Update[counter], counter) {
				return []statesync.Update[counter]{add{N: int64(i)}}, v
			})
		}()
		<-queued
	}
	wg.Wait()
	var want counter
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if saw[i] != want {
			t.Fatalf("call %d saw %d, want %d: the sum of the calls started before it", i, saw[i], want)
		}
		want += counter(i)
	}
	if v := value(t, s); v != want {
		t.Fatalf("counter = %d, want %d", v, want)
	}
}

// An unconditional write (a lease refresh, whose entry must land before a
// deadline) is appended while a conditional write of its synchronizer is in
// flight, not after it; and the read that takes its entry in first, here
// the conditional write's catch-up, takes it as this synchronizer's own.
func TestUnconditionalWriteLandsWhileAnAppendIsInFlight(t *testing.T) {
	log := newGateLog()
	var mu sync.Mutex
	local := map[uint64]bool{}
	s := newCounter(t, log, statesync.WithApplied(func(a statesync.Applied[counter]) {
		mu.Lock()
		defer mu.Unlock()
		local[a.Entry.Revision] = a.Local
	}))
	release := holdOne(t, log, s)
	before, err := logtest.LastRevision(log, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done, within := finishes(func() {
		if _, err := s.UpdateUnconditionally(context.Background(), add{N: 10}); err != nil {
			t.Errorf("UpdateUnconditionally: %v", err)
		}
	})
	waitFor(t, "the unconditional entry to land beside the held append", func() bool {
		last, err := logtest.LastRevision(log, context.Background())
		return err == nil && last == before+1
	})
	release()
	if !within(10 * time.Second) {
		t.Fatal("UpdateUnconditionally did not return")
	}
	<-done
	if got := value(t, s); got != 11 {
		t.Fatalf("value %d, want 11", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !local[before+1] {
		t.Errorf("the unconditional entry at %d was taken in as another writer's (applied: %v)", before+1, local)
	}
}

// finishes runs fn in the background and reports whether it returned
// within d; the returned channel is closed once it does.
func finishes(fn func()) (<-chan struct{}, func(d time.Duration) bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	return done, func(d time.Duration) bool {
		select {
		case <-done:
			return true
		case <-time.After(d):
			return false
		}
	}
}

// Calls that run out of time behind a write holding back for older
// writers' turns say so (a ContendedError with Lost 0 and the time they
// waited), whether queued behind it or in the batch that holds back, not
// a bare deadline that the shell takes for a server that does not answer.
func TestCallsHeldBackForTurnsSaySo(t *testing.T) {
	hour := time.Hour
	log := newGateLog()
	s := newCounter(t, log, statesync.WithTurns(turns.New(turns.Options{ClaimGrace: hour, MaxHoldBack: hour, StaleAfter: hour})))
	releaseFirst := holdOne(t, log, s)
	log.Announce([]byte("once old 0")) // older than every write here, never judged
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	b := queue(t, short, s, adding(1))
	c := queue(t, short, s, adding(10))
	releaseFirst() // b and c go as one batch, which holds back for "old"
	later, cancelLater := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelLater()
	waitFor(t, "the batch to hold back", func() bool { return statesync.Queued(s) == 0 })
	d := queue(t, later, s, adding(100)) // queued behind the batch
	for name, x := range map[string]*call{"batched b": b, "batched c": c, "queued d": d} {
		<-x.done
		var contended *turns.ContendedError
		if !errors.As(x.err, &contended) || contended.Lost != 0 || contended.HeldBack < 50*time.Millisecond || !errors.Is(x.err, context.DeadlineExceeded) {
			t.Errorf("%s, out of time behind a write holding back for turns: %v; want a ContendedError with the time held back, wrapping the deadline", name, x.err)
		}
	}
}
