package statesync_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// A synchronizer whose log was deleted and created again never mixes the two
// incarnations: whatever it does next (a fetch, a write, a compaction, a
// decision to write nothing), it finds the log replaced, reloads it, reports
// ErrReplaced and writes nothing, whether the new log is shorter than its
// copy, as long, or longer.
func TestReplacedLogIsReloadedNotMixed(t *testing.T) {
	ops := map[string]func(context.Context, *statesync.Synchronizer[counter]) error{
		"fetch": func(ctx context.Context, s *statesync.Synchronizer[counter]) error { return s.Fetch(ctx) },
		"write": func(ctx context.Context, s *statesync.Synchronizer[counter]) error {
			_, err := increment(ctx, s)
			return err
		},
		"compact": func(ctx context.Context, s *statesync.Synchronizer[counter]) error {
			return s.Compact(ctx, func(c counter) statesync.InitialUpdate[counter] { return example.CounterStart{Value: int64(c)} })
		},
		// A decision to write nothing (PUT_IF_ABSENT on a key the copy
		// holds) is confirmed against the log, which must be this one.
		"decide nothing": func(ctx context.Context, s *statesync.Synchronizer[counter]) error {
			_, _, err := statesync.UpdateState(ctx, s, func(counter) ([]statesync.Update[counter], struct{}) { return nil, struct{}{} })
			return err
		},
	}
	// The old copy stands at revision 4; the new log gets 1 + newWrites
	// entries.
	for _, newWrites := range []int{1, 3, 8} {
		for name, op := range ops {
			t.Run(fmt.Sprintf("%s/new log at %d", name, 1+newWrites), func(t *testing.T) {
				ctx := context.Background()
				old, fresh := replacedUnder(t, newWrites)
				if err := op(ctx, old); !errors.Is(err, statesync.ErrReplaced) {
					t.Fatalf("%s on the old copy: %v, want ErrReplaced", name, err)
				}
				if v := value(t, old); v != counter(newWrites) {
					t.Fatalf("after the %s the old copy holds %d, want the new log's %d", name, v, newWrites)
				}
				if err := fresh.Fetch(ctx); err != nil {
					t.Fatal(err)
				}
				if v := value(t, fresh); v != counter(newWrites) {
					t.Fatalf("the new log holds %d after the old copy's %s, want %d: it wrote into it", v, name, newWrites)
				}
				if _, err := increment(ctx, old); err != nil {
					t.Fatalf("a write after the reload: %v", err)
				}
				if err := fresh.Fetch(ctx); err != nil || value(t, fresh) != counter(newWrites+1) {
					t.Fatalf("after a write on the reloaded copy the new log holds %d (%v), want %d", value(t, fresh), err, newWrites+1)
				}
			})
		}
	}
}

// replacedUnder returns two copies of one log: old, at revision 4 when
// the log is deleted and created again, and fresh, which gives the new log
// 1 + newWrites entries.
func replacedUnder(t *testing.T, newWrites int) (old, fresh *statesync.Synchronizer[counter]) {
	t.Helper()
	ctx := context.Background()
	log := memlog.New("t")
	old = statesync.New[counter](log, counterCodec)
	if err := old.Initialize(ctx, start(100)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := increment(ctx, old); err != nil {
			t.Fatal(err)
		}
	}
	log.Recreate()
	fresh = newCounter(t, log)
	for range newWrites {
		if _, err := increment(ctx, fresh); err != nil {
			t.Fatal(err)
		}
	}
	return old, fresh
}

// A follower of a damaged log says so once, not once per append after the
// damage; it says it again once the error changes. (Issue 19.12.)
func TestFollowSaysAnErrorOnce(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	writer, follower := newCounter(t, log), newCounter(t, log)
	log.AppendRaw([]byte("garbage"), false)
	errs := make(chan error, 100)
	stop, err := follower.Follow(func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	<-errs
	for range 5 {
		if _, err := writer.UpdateUnconditionally(ctx, add{N: 1}); err == nil {
			t.Fatal("a write read back past the damage")
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("the follower said the same error again: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
}

// readCountingLog counts the reads made of a memlog.Log.
type readCountingLog struct {
	*memlog.Log
	reads int
}

func (l *readCountingLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	l.reads++
	return l.Log.ReadAfter(ctx, after, upTo, fn)
}

// A fetch with nothing to read asks the log where it ends and which entry
// stands there, and nothing more: the answer already says the log is the
// one the copy was read from (a REFRESH with nothing pending, one request).
// A log of the same length that is another incarnation is still found.
func TestFetchAtTheEndAsksOnce(t *testing.T) {
	ctx := context.Background()
	log := &readCountingLog{Log: memlog.New("t")}
	s := newCounter(t, log)
	for range 3 {
		if _, err := increment(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	log.reads = 0
	if err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if log.reads != 0 {
		t.Fatalf("a fetch with nothing to read read the log %d times, want 0", log.reads)
	}
	log.Recreate()
	fresh := newCounter(t, log)
	for range 3 {
		if _, err := increment(ctx, fresh); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Fetch(ctx); !errors.Is(err, statesync.ErrReplaced) {
		t.Fatalf("a fetch from a new log of the same length: %v, want ErrReplaced", err)
	}
}

// An unconditional write from a copy of a log that was deleted and created
// again lands in the new log (nothing conditions it), but never returns
// the old copy's state as the state at its entry: it finds the log
// replaced, reloads it and reports ErrReplaced, whether its entry lands
// below the old copy's revision, at it, or past it.
func TestUnconditionalWriteIntoAReplacedLogSaysSo(t *testing.T) {
	for _, newWrites := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("new log at %d", 1+newWrites), func(t *testing.T) {
			old, _ := replacedUnder(t, newWrites)
			got, err := old.UpdateUnconditionally(context.Background(), add{N: 1})
			if !errors.Is(err, statesync.ErrReplaced) {
				t.Fatalf("an unconditional write on the old copy (at revision 4) gave %d, %v; want ErrReplaced", got, err)
			}
			if v := value(t, old); v != counter(newWrites+1) {
				t.Fatalf("after it the old copy holds %d, want the new log's %d", v, newWrites+1)
			}
		})
	}
}

// A batch of queued calls whose append finds the log deleted and created
// again, or purged by hand, lands nothing of what it tried: its calls were
// decided on a state the log no longer holds. The first call says what it
// found; the calls after it, as the writes after that answer, run again on
// the copy reloaded from the new log (WithRecreate is not needed there),
// while after a purge they say it too, as the copy holds no state. (A batch
// that found the log created again used to fall back to one try per call,
// as for a refusal of what one call's updates are, and each then landed in
// the new log, the first one too: nobody heard that the log had changed.)
func TestBatchThatFindsTheLogGoneWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		do       func(*gateLog) // done while the batch's append is held
		want     error
		wantNext error  // the second call's outcome
		last     uint64 // the log's last revision after
		value    counter
	}{
		{"created again", func(l *gateLog) {
			l.Recreate()
			if _, err := increment(context.Background(), newCounter(t, l.Log)); err != nil {
				t.Fatal(err)
			}
		}, statesync.ErrReplaced, nil, 3, 11},
		{"purged", func(l *gateLog) { l.Purge() }, statesync.ErrEmptied, statesync.ErrEmptied, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			log := newGateLog()
			old := newCounter(t, log)
			holdOne(t, log, old) // lands on the log as it was
			b := queue(t, ctx, old, adding(1))
			c := queue(t, ctx, old, adding(10))
			log.gated.Store(true) // the batch's append is held in turn
			log.release <- struct{}{}
			<-log.entered
			tc.do(log)
			log.release <- struct{}{}
			<-b.done
			<-c.done
			if !errors.Is(b.err, tc.want) || !errors.Is(c.err, tc.wantNext) {
				t.Errorf("the batch's calls got %v and %v, want %v and %v", b.err, c.err, tc.want, tc.wantNext)
			}
			if last, err := logtest.LastRevision(log, ctx); err != nil || last != tc.last {
				t.Fatalf("the log ends at %d (%v) after the batch, want %d", last, err, tc.last)
			}
			if tc.wantNext == nil && value(t, old) != tc.value {
				t.Errorf("the copy holds %d, want %d: the second call's 10 on the new log's 1", value(t, old), tc.value)
			}
		})
	}
}

// deletableLog is a gateLog that can be deleted, as a JetStream stream
// is: every call then fails with ErrDeleted, except a snapshot at the start
// of an empty log (what Initialize writes), which creates it again.
type deletableLog struct {
	*gateLog
	deleted atomic.Bool
}

func (l *deletableLog) Delete() {
	l.Recreate()
	l.deleted.Store(true)
}

func (l *deletableLog) gone() error {
	if l.deleted.Load() {
		return fmt.Errorf("%s: %w", l.Name(), statesync.ErrDeleted)
	}
	return nil
}

func (l *deletableLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	l.beforeAppend()
	if err := l.gone(); err != nil {
		return statesync.Position{}, err
	}
	return l.Log.AppendAfter(ctx, last, data)
}

func (l *deletableLog) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	if last.Revision == 0 && last.ID == "" {
		l.deleted.Store(false)
	}
	if err := l.gone(); err != nil {
		return statesync.Position{}, err
	}
	return l.Log.CompactAfter(ctx, last, snapshot)
}

func (l *deletableLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	if err := l.gone(); err != nil {
		return err
	}
	return l.Log.ReadAfter(ctx, after, upTo, fn)
}

func (l *deletableLog) LastPosition(ctx context.Context) (statesync.Position, error) {
	if err := l.gone(); err != nil {
		return statesync.Position{}, err
	}
	return l.Log.LastPosition(ctx)
}

// A log deleted while writes wait behind the one that finds it: that one
// says so, and writes nothing; those behind it, in its batch or the next,
// are the writes after its answer, which create the log again
// (WithRecreate) and land there in order, as they would had they started
// after it. Without WithRecreate they say so too.
func TestWritesBehindTheOneThatFoundTheLogDeletedCreateItAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sameBatch bool // the finder shares its batch with the calls behind it
		recreate  bool
	}{
		{"next batch", false, true},
		{"same batch", true, true},
		{"without WithRecreate", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			log := &deletableLog{gateLog: newGateLog()}
			var opts []statesync.Option
			if tc.recreate {
				opts = append(opts, statesync.WithRecreate[counter](start(0)))
			}
			s := newCounter(t, log, opts...)
			log.gated.Store(true)
			first := make(chan error, 1)
			go func() {
				_, err := increment(ctx, s)
				first <- err
			}()
			<-log.entered
			finder := first // the call whose append finds the log deleted
			b := queue(t, ctx, s, adding(10))
			c := queue(t, ctx, s, adding(100))
			want := int64(110)
			if tc.sameBatch {
				log.gated.Store(true) // b and c's append is held in turn
				log.release <- struct{}{}
				if err := <-first; err != nil {
					t.Fatal(err)
				}
				<-log.entered
				finder = make(chan error, 1)
				go func() { <-b.done; finder <- b.err }()
				want = 100
			}
			log.Delete()
			log.release <- struct{}{}
			if err := <-finder; !errors.Is(err, statesync.ErrDeleted) {
				t.Fatalf("the call that found the log deleted got %v, want ErrDeleted", err)
			}
			<-b.done
			<-c.done
			switch {
			case !tc.recreate:
				if !errors.Is(b.err, statesync.ErrDeleted) || !errors.Is(c.err, statesync.ErrDeleted) {
					t.Errorf("the calls behind got %v and %v, want ErrDeleted", b.err, c.err)
				}
			case !tc.sameBatch && b.err != nil || c.err != nil:
				t.Errorf("the calls behind the one that found the log deleted got %v and %v, want them to create it again", b.err, c.err)
			case value(t, s) != counter(want):
				t.Errorf("the log created again holds %d, want %d", value(t, s), want)
			}
		})
	}
}

// Compactions a policy judged due before one of them found the log
// deleted (each call of a batch asks after its answer, at once) write
// nothing and fail nothing once the copy is dropped: there is nothing to
// compact. They used to load the log again, and each failed with
// ErrDeleted, so a script with a small --compact-entries said "Compaction
// failed" once for every line of the batch.
func TestPolicyCompactionsOfADroppedCopyWriteNothing(t *testing.T) {
	ctx := context.Background()
	log := &deletableLog{gateLog: newGateLog()}
	s := newCounter(t, log)
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	due := func() bool { return s.EntriesSinceCompaction() >= 1 }
	log.Delete()
	if err := s.CompactIf(ctx, counterSnapshot, due); !errors.Is(err, statesync.ErrDeleted) {
		t.Fatalf("the compaction that finds the log deleted got %v, want ErrDeleted", err)
	}
	for range 3 {
		if err := s.CompactIf(ctx, counterSnapshot, func() bool { return true }); err != nil {
			t.Fatalf("a compaction due before the copy was dropped got %v, want nothing done", err)
		}
	}
}

// A decision to write nothing that finds the log deleted drops the copy, as
// a write that finds it does, so that the next write creates the log
// again. It used to keep the copy: every later decision on it said the log
// was deleted, and so did the first write after ("QUIT, or PUT to create
// it again", and that PUT said the same), and the writes queued behind it
// never created the log again (WithRecreate).
func TestDecisionToWriteNothingThatFindsTheLogDeletedDropsTheCopy(t *testing.T) {
	ctx := context.Background()
	log := &deletableLog{gateLog: newGateLog()}
	s := newCounter(t, log)
	log.Delete()
	nothing := func(counter) ([]statesync.Update[counter], struct{}) { return nil, struct{}{} }
	if _, _, err := statesync.UpdateState(ctx, s, nothing); !errors.Is(err, statesync.ErrDeleted) {
		t.Fatalf("the decision got %v, want ErrDeleted", err)
	}
	if _, ok := s.Revision(); ok {
		t.Fatal("the copy of the deleted log was kept")
	}
	if err := s.Initialize(ctx, start(0)); err != nil { // as the next write of a Config does
		t.Fatal(err)
	}
	if _, err := increment(ctx, s); err != nil {
		t.Fatalf("the write after it got %v, want the log created again", err)
	}
}

// A write that takes no turns (a lease's expiry, made in the background)
// does not create a deleted log again: only a write someone asked for
// does, once the copy was dropped.
func TestWriteWithoutTurnsDoesNotCreateTheLogAgain(t *testing.T) {
	ctx := context.Background()
	log := &deletableLog{gateLog: newGateLog()}
	s := newCounter(t, log, statesync.WithRecreate[counter](start(0)))
	log.Delete()
	if err := s.Fetch(ctx); !errors.Is(err, statesync.ErrDeleted) {
		t.Fatalf("a fetch of the deleted log: %v, want ErrDeleted", err)
	}
	if _, _, err := statesync.UpdateState(turns.Without(ctx), s, func(counter) ([]statesync.Update[counter], bool) {
		return adding(1)(0), true
	}); !errors.Is(err, statesync.ErrDeleted) {
		t.Fatalf("a write without turns: %v, want ErrDeleted", err)
	}
	if _, err := log.LastPosition(ctx); !errors.Is(err, statesync.ErrDeleted) {
		t.Fatalf("after a write without turns the log is there again (%v)", err)
	}
	if _, err := increment(ctx, s); err != nil {
		t.Fatalf("a write after the drop: %v, want it to create the log again", err)
	}
	if got := value(t, s); got != 1 {
		t.Errorf("the log created again holds %d, want 1", got)
	}
}
