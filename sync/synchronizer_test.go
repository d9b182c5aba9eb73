package statesync_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

func TestMain(m *testing.M) { testmain.Run(m) }

type (
	counter = example.Counter
	add     = example.Add
)

var counterCodec = example.CounterCodec{}

func start(n int64) example.CounterStart { return example.CounterStart{Value: n} }

func newCounter(t *testing.T, log statesync.Log, opts ...statesync.Option) *statesync.Synchronizer[counter] {
	t.Helper()
	s := statesync.New[counter](log, counterCodec, opts...)
	if err := s.Initialize(context.Background(), start(0)); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return s
}

var increment = example.Increment

func value(t *testing.T, s *statesync.Synchronizer[counter]) counter {
	t.Helper()
	st, rev := s.State()
	if rev == 0 {
		t.Fatal("state not initialized")
	}
	return st
}

func TestInitializeNeverOverwrites(t *testing.T) {
	log := memlog.New("t")
	a := newCounter(t, log)
	if _, err := increment(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	b := statesync.New[counter](log, counterCodec)
	if _, rev := b.State(); rev != 0 {
		t.Fatal("a new synchronizer claims a state before loading one")
	}
	if err := b.Initialize(context.Background(), start(100)); err != nil {
		t.Fatal(err)
	}
	if v := value(t, b); v != 1 {
		t.Fatalf("second Initialize gave %d, want the shared 1", v)
	}
}

func TestUpdateStateRerunsOnConflict(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	a := newCounter(t, log)
	if _, err := increment(ctx, a); err != nil {
		t.Fatal(err)
	}
	var attempts []statesync.Attempt
	b := statesync.New[counter](log, counterCodec, statesync.WithTrace(func(at statesync.Attempt) { attempts = append(attempts, at) }))
	if err := b.Initialize(ctx, start(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := increment(ctx, a); err != nil { // b is now stale
		t.Fatal(err)
	}
	runs := 0
	saw, _, err := statesync.UpdateState(ctx, b, func(c counter) ([]statesync.Update[counter], counter) {
		runs++
		return []statesync.Update[counter]{add{N: 10}}, c
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || saw != 2 {
		t.Fatalf("function ran %d times and returned %d; want 2 runs returning the fresh value 2", runs, saw)
	}
	if v := value(t, b); v != 12 {
		t.Fatalf("b = %d, want 12", v)
	}
	if len(attempts) != 2 || attempts[0].Conflict == nil || attempts[0].CaughtUp != 3 || attempts[1].Revision != 4 {
		t.Fatalf("trace = %+v; want a conflict caught up to 3, then a commit at 4", attempts)
	}
}

func TestNoUpdateDecisionIsCheckedAgainstTheLog(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	a, b := newCounter(t, log), newCounter(t, log)
	if _, err := increment(ctx, a); err != nil {
		t.Fatal(err)
	}
	// b's copy says 0, so on it "add one only if already counting" decides
	// to write nothing. That decision must be checked against the log, which
	// is at 1: then b catches up, decides again, and writes.
	wrote, _, err := statesync.UpdateState(ctx, b, func(c counter) ([]statesync.Update[counter], bool) {
		if c == 0 {
			return nil, false
		}
		return []statesync.Update[counter]{add{N: 1}}, true
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := value(t, b); !wrote || v != 2 {
		t.Fatalf("wrote=%v value=%d; want the decision made again on the current state: wrote, value 2", wrote, v)
	}
	if rev, _ := logtest.LastRevision(log, ctx); rev != 3 {
		t.Fatalf("log at %d, want 3 (one more entry)", rev)
	}
}

func TestConcurrentIncrementsLoseNothing(t *testing.T) {
	log := memlog.New("t")
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for range writers {
		s := newCounter(t, log)
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
	r := newCounter(t, log)
	if v := value(t, r); v != writers*each {
		t.Fatalf("counter = %d, want %d", v, writers*each)
	}
}

func TestCompactionAndCatchUp(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	a, stale := newCounter(t, log), newCounter(t, log)
	for range 5 {
		if _, err := increment(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.EntriesSinceCompaction(); n != 5 {
		t.Fatalf("EntriesSinceCompaction = %d, want 5", n)
	}
	if err := a.Compact(ctx, func(c counter) statesync.InitialUpdate[counter] { return example.CounterStart{Value: int64(c)} }); err != nil {
		t.Fatal(err)
	}
	if n := a.EntriesSinceCompaction(); n != 0 {
		t.Fatalf("EntriesSinceCompaction after Compact = %d, want 0", n)
	}
	if _, err := increment(ctx, a); err != nil {
		t.Fatal(err)
	}
	// stale was at revision 1, before the snapshot: it resumes from it.
	if err := stale.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if v := value(t, stale); v != 6 {
		t.Fatalf("stale reader after compaction = %d, want 6", v)
	}
	if v := value(t, newCounter(t, log)); v != 6 {
		t.Fatalf("new reader after compaction = %d, want 6", v)
	}
}

func TestGarbageEntry(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("garbage")
	s := newCounter(t, log)
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	bad := log.AppendRaw([]byte("{not json"), false)
	err := s.Fetch(ctx)
	var entryErr *statesync.EntryError
	if !errors.As(err, &entryErr) || entryErr.Revision != bad || !strings.HasPrefix(err.Error(), "garbage: entry ") {
		t.Fatalf("Fetch over garbage: %v; want an EntryError naming entry %d", err, bad)
	}
	if st, rev := s.State(); st != 1 || rev != 2 {
		t.Fatalf("state after garbage = %+v; want the last good state (1 at revision 2)", st)
	}
	if _, err := increment(ctx, s); !errors.As(err, &entryErr) {
		t.Fatalf("write past garbage: %v; want the EntryError", err)
	}
	// An update before any initial state is refused the same way.
	fresh := memlog.New("fresh")
	fresh.AppendRaw([]byte(`{"add":[1]}`), false)
	if err := statesync.New[counter](fresh, counterCodec).Initialize(ctx, start(0)); !errors.As(err, &entryErr) {
		t.Fatalf("Initialize over an update-first log: %v; want an EntryError", err)
	}
}

// conflictingLog refuses every append, as a log under endless contention would.
type conflictingLog struct{ *memlog.Log }

func (l conflictingLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	return statesync.Position{}, &statesync.ConflictError{}
}

func TestUpdateStateIsBoundedByContext(t *testing.T) {
	log := conflictingLog{memlog.New("t")}
	s := newCounter(t, log)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := increment(ctx, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("endless conflicts gave %v, want the context's deadline", err)
	}
}

// outrunLog is a log where a competing writer appends just before each
// conditional append or compaction: every try loses.
type outrunLog struct {
	*memlog.Log
	rival *statesync.Synchronizer[counter]
}

func (l outrunLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	if _, err := increment(ctx, l.rival); err != nil {
		return statesync.Position{}, err
	}
	return l.Log.AppendAfter(ctx, last, data)
}

func (l outrunLog) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	if _, err := increment(ctx, l.rival); err != nil {
		return statesync.Position{}, err
	}
	return l.Log.CompactAfter(ctx, last, snapshot)
}

// A write starved by other writers says how many tries it lost, so that it
// is not taken for a log that stopped answering.
func TestStarvedWriteSaysHowManyTriesItLost(t *testing.T) {
	mem := memlog.New("t")
	log := outrunLog{mem, newCounter(t, mem)}
	conflicts := 0
	s := newCounter(t, log, statesync.WithTrace(func(a statesync.Attempt) {
		if a.Conflict != nil {
			conflicts++
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := increment(ctx, s)
	var contended *turns.ContendedError
	if !errors.As(err, &contended) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write that lost every try gave %v; want a ContendedError wrapping the deadline", err)
	}
	if contended.Lost < 1 || contended.Lost != conflicts {
		t.Fatalf("ContendedError.Lost = %d; the trace saw %d conflicts", contended.Lost, conflicts)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = s.Compact(ctx, func(c counter) statesync.InitialUpdate[counter] { return start(int64(c)) })
	if !errors.As(err, &contended) || contended.Lost < 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a compaction that lost every try gave %v; want a ContendedError wrapping the deadline", err)
	}
}

// silentAfterLoss is a log where a rival appends just before the first
// conditional append, and which then answers nothing: the catch-up after
// that lost try waits until its context ends, as on a server gone.
type silentAfterLoss struct {
	*memlog.Log
	rival  *statesync.Synchronizer[counter]
	silent atomic.Bool
}

func (l *silentAfterLoss) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	if _, err := increment(ctx, l.rival); err != nil {
		return statesync.Position{}, err
	}
	defer l.silent.Store(true)
	return l.Log.AppendAfter(ctx, last, data)
}

func (l *silentAfterLoss) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	if l.silent.Load() {
		<-ctx.Done()
		return fmt.Errorf("t: %w (%w)", statesync.ErrNoAnswer, ctx.Err())
	}
	return l.Log.ReadAfter(ctx, after, upTo, fn)
}

// A write that lost a try and then heard nothing from the log until its
// time ran out was cut off, not starved: it says the log's silence, not a
// ContendedError, which would say the log was answering.
func TestWriteCutOffAfterALostTryIsNotContended(t *testing.T) {
	mem := memlog.New("t")
	log := &silentAfterLoss{Log: mem, rival: newCounter(t, mem)}
	s := newCounter(t, log)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := increment(ctx, s)
	var contended *turns.ContendedError
	if !errors.Is(err, statesync.ErrNoAnswer) || !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &contended) {
		t.Fatalf("a write cut off after losing its one try gave %v; want ErrNoAnswer and the deadline, not a ContendedError", err)
	}
}

// A write that never got to try is not called contended.
func TestWriteWithNoConflictsIsNotContended(t *testing.T) {
	s := newCounter(t, memlog.New("t"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := increment(ctx, s)
	var contended *turns.ContendedError
	if !errors.Is(err, context.Canceled) || errors.As(err, &contended) {
		t.Fatalf("a write with an ended context gave %v; want context.Canceled alone", err)
	}
}

// An unconditional update lands whatever the writer's copy missed, and the
// writer reads up to its own entry: the state it gets back holds what came
// before the entry and the entry, and nothing after.
func TestUpdateUnconditionally(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	var tries []statesync.Attempt
	s := newCounter(t, log, statesync.WithTrace(func(a statesync.Attempt) { tries = append(tries, a) }))
	other := newCounter(t, log)
	if _, err := increment(ctx, other); err != nil { // s's copy is now behind
		t.Fatal(err)
	}
	after, err := s.UpdateUnconditionally(ctx, add{N: 5})
	if err != nil {
		t.Fatal(err)
	}
	_, rev := s.State()
	if after != 6 || rev != lastRevision(t, log) {
		t.Fatalf("state after the entry = %d at revision %d, want 6 at %d", after, rev, lastRevision(t, log))
	}
	if len(tries) != 1 || tries[0].Base != statesync.AnyRevision || tries[0].Conflict != nil || tries[0].Revision != rev {
		t.Fatalf("tries %+v, want one unconditional try that landed at %d", tries, rev)
	}
	if v := value(t, s); v != 6 {
		t.Fatalf("local copy = %d, want 6", v)
	}
}

func TestUninitializedLog(t *testing.T) {
	s := statesync.New[counter](memlog.New("t"), counterCodec)
	if _, err := increment(context.Background(), s); !errors.Is(err, statesync.ErrNotInitialized) {
		t.Fatalf("update on an empty log: %v, want ErrNotInitialized", err)
	}
}

func TestFollow(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	var mu sync.Mutex
	var seen []uint64
	follower := newCounter(t, log, statesync.WithApplied(func(a statesync.Applied[counter]) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, a.Revision)
	}))
	stop, err := follower.Follow(func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	writer := newCounter(t, log)
	for range 3 {
		if _, err := increment(ctx, writer); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for value(t, follower) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the follower is at %d, want 3 without a Fetch", value(t, follower))
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] != 2 || seen[2] != 4 {
		t.Fatalf("applied entries %v, want [2 3 4]", seen)
	}
}

func TestAppliedReportsLocalWrites(t *testing.T) {
	var local []bool
	s := newCounter(t, memlog.New("t"), statesync.WithApplied(func(a statesync.Applied[counter]) {
		local = append(local, a.Local)
	}))
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if len(local) != 1 || !local[0] {
		t.Fatalf("applied %v, want one local entry", local)
	}
}

// A watcher hears of a change only once the local copy shows it.
func TestAppliedAfterStateShowsIt(t *testing.T) {
	log := memlog.New("t")
	var s *statesync.Synchronizer[counter]
	var lagging []uint64
	s = newCounter(t, log, statesync.WithApplied(func(a statesync.Applied[counter]) {
		if _, rev := s.State(); rev < a.Revision {
			lagging = append(lagging, a.Revision)
		}
	}))
	if _, err := increment(context.Background(), newCounter(t, log)); err != nil {
		t.Fatal(err)
	}
	if err := s.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(lagging) > 0 {
		t.Fatalf("watchers heard of entries %v before the state showed them", lagging)
	}
}

func TestProgressOfALongCatchUp(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	writer := newCounter(t, log)
	for range 3000 {
		if _, err := writer.UpdateUnconditionally(ctx, add{N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var reports [][2]uint64
	newCounter(t, log, statesync.WithProgress(func(done, total uint64) {
		reports = append(reports, [2]uint64{done, total})
	}))
	if len(reports) < 3 || reports[len(reports)-1] != [2]uint64{3001, 3001} {
		t.Fatalf("progress reports %v; want some on the way and a last one at 3001 of 3001", reports)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i][0] <= reports[i-1][0] {
			t.Fatalf("progress went backwards: %v", reports)
		}
	}
}

// A watcher, or a batch, written for another state type is refused, not
// silently dropped.
func TestOptionsOfAnotherStateAreRefused(t *testing.T) {
	for name, opt := range map[string]statesync.Option{
		"WithApplied": statesync.WithApplied(func(statesync.Applied[example.Set]) {}),
		"WithBatch": statesync.WithBatch(func(s example.Set, _ []statesync.Update[example.Set], _ []uint64) example.Set {
			return s
		}),
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, name) || !strings.Contains(msg, "example.Set") {
					t.Fatalf("New with %s of sets on a counter: recovered %q; want a panic naming %s and the option's type", name, msg, name)
				}
			}()
			statesync.New[counter](memlog.New("t"), counterCodec, opt)
			t.Fatalf("New accepted %s of another state type", name)
		}()
	}
}

// A catch-up applies runs of plain updates through WithBatch's function,
// which gets them with their entries' revisions, and the state it makes is
// the copy's.
func TestCatchUpAppliesRunsWithBatch(t *testing.T) {
	log := memlog.New("t")
	newCounter(t, log)
	one, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3000 { // revisions 2 to 3,001
		log.AppendRaw(one, false)
	}
	var calls int
	var revisions []uint64
	s := statesync.New[counter](log, counterCodec, statesync.WithBatch(func(c counter, us []statesync.Update[counter], revs []uint64) counter {
		calls++
		revisions = append(revisions, revs...)
		for i, u := range us {
			c = u.Apply(c, revs[i])
		}
		return c + 1_000_000 // marks a state the batch made
	}))
	if err := s.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls == 0 || len(revisions) != 3000 || revisions[0] != 2 || revisions[2999] != 3001 {
		t.Fatalf("the batch was called %d times with %d updates; want all 3,000, revisions 2 to 3,001", calls, len(revisions))
	}
	if got, want := value(t, s), counter(3000+calls*1_000_000); got != want {
		t.Fatalf("the copy holds %d, want %d: the batch's states", got, want)
	}
}

// A long catch-up shows what it has read, and tells the applied hook of it,
// as it goes: the hook, which hears every entry once State shows it, need
// not wait for the end of the read, nor the catch-up hold every entry.
func TestAppliedAsALongCatchUpGoes(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	newCounter(t, log)
	one, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for range 10_000 { // revisions 2 to 10,001
		log.AppendRaw(one, false)
	}
	var s *statesync.Synchronizer[counter]
	var heard, shown []uint64 // each entry's revision, and State's when the hook heard it
	s = statesync.New[counter](log, counterCodec, statesync.WithApplied(func(a statesync.Applied[counter]) {
		_, rev := s.State()
		heard, shown = append(heard, a.Revision), append(shown, rev)
	}))
	if err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 10_001 || heard[0] != 1 || heard[len(heard)-1] != 10_001 {
		t.Fatalf("the hook heard %d entries, from %v; want revisions 1 to 10,001", len(heard), heard[:min(3, len(heard))])
	}
	for i, rev := range heard {
		if i > 0 && rev != heard[i-1]+1 || shown[i] < rev {
			t.Fatalf("the hook heard revision %d (after %d) with State at %d", rev, heard[max(i-1, 0)], shown[i])
		}
	}
	if shown[0] == 10_001 {
		t.Fatal("the hook heard of the first entries only once the whole catch-up was done")
	}
}

func lastRevision(t *testing.T, log statesync.Log) uint64 {
	t.Helper()
	rev, err := logtest.LastRevision(log, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// A log that cannot say where it ends (time ran out, or the user may not
// ask) is not taken for an empty one: Initialize fails with that error and
// writes nothing (a read-only command opened so would publish a snapshot).
func TestInitializeWritesNothingWhereTheLogsEndIsUnknown(t *testing.T) {
	t.Parallel()
	log := &blindLog{Log: memlog.New("t"), err: errors.New("the user may not ask")}
	s := statesync.New[counter](log, counterCodec)
	err := s.Initialize(context.Background(), start(0))
	if !errors.Is(err, log.err) {
		t.Fatalf("Initialize = %v; want the log's error", err)
	}
	if log.appends != 0 {
		t.Fatalf("Initialize made %d appends; want none", log.appends)
	}
	// A deleted log is one the first entry creates again.
	deleted := &blindLog{Log: memlog.New("t"), err: statesync.ErrDeleted}
	if err := statesync.New[counter](deleted, counterCodec).Initialize(context.Background(), start(0)); err != nil || deleted.appends != 1 {
		t.Fatalf("Initialize on a deleted log: %v, %d appends; want the first entry written", err, deleted.appends)
	}
}

// blindLog fails every LastPosition with err, and counts appends.
type blindLog struct {
	*memlog.Log
	err     error
	appends int
}

func (l *blindLog) LastPosition(context.Context) (statesync.Position, error) {
	return statesync.Position{}, l.err
}

func (l *blindLog) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	l.appends++
	return l.Log.CompactAfter(ctx, last, snapshot)
}

func (l *blindLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	l.appends++
	return l.Log.AppendAfter(ctx, last, data)
}
