package statesync_test

import (
	"context"
	"errors"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// emptiedLog is a log whose three entries were purged (memlog.Purge), as a
// JetStream stream emptied by hand: it holds no state, and ends at 3.
func emptiedLog(t *testing.T) *memlog.Log {
	t.Helper()
	log := memlog.New("t")
	s := newCounter(t, log)
	for range 2 {
		if _, err := increment(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	log.Purge()
	return log
}

// A log that holds no state, though its revisions went up to 3, is as an
// empty one: Initialize writes the initial state after 3.
func TestInitializeEmptiedLog(t *testing.T) {
	ctx := context.Background()
	log := emptiedLog(t)
	s := statesync.New[counter](log, counterCodec)
	if err := s.Initialize(ctx, start(7)); err != nil {
		t.Fatalf("Initialize on an emptied log: %v", err)
	}
	if st, rev := s.State(); st != 7 || rev != 4 {
		t.Fatalf("state %d at %d, want the initial 7 at 4", st, rev)
	}
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	other := newCounter(t, log)
	if st, rev := other.State(); st != 8 || rev != 5 {
		t.Fatalf("another reader has %d at %d, want 8 at 5", st, rev)
	}
}

// A Fetch of an emptied log by a synchronizer that holds no state reads
// it as empty, and writes nothing.
func TestFetchEmptiedLogWritesNothing(t *testing.T) {
	log := emptiedLog(t)
	s := statesync.New[counter](log, counterCodec)
	for range 2 {
		if err := s.Fetch(context.Background()); err != nil {
			t.Fatalf("Fetch of an emptied log: %v", err)
		}
	}
	if st, rev := s.State(); st != 0 || rev != 0 {
		t.Fatalf("state %d at %d, want none", st, rev)
	}
	if last := lastRevision(t, log); last != 3 {
		t.Fatalf("the log ends at %d after reads, want 3", last)
	}
}

// A copy that held state, of a log since emptied and written past, loses
// that state and says why: the next write must not append an update that
// no initial state precedes. Initialize then starts the log again.
func TestCopyOfEmptiedLog(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	other := newCounter(t, log)
	if _, err := increment(ctx, other); err != nil {
		t.Fatal(err)
	}
	log.Purge()
	if err := s.Fetch(ctx); !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("Fetch of a log emptied under the copy: %v, want ErrEmptied", err)
	}
	if _, rev := s.State(); rev != 0 {
		t.Fatalf("the copy kept a state at %d", rev)
	}
	if _, err := increment(ctx, s); err == nil {
		t.Fatal("an update without an initial state landed")
	}
	if err := s.Initialize(ctx, start(0)); err != nil {
		t.Fatal(err)
	}
	if _, rev := s.State(); rev != 3 {
		t.Fatalf("initial state at %d, want 3", rev)
	}
}

// A copy at the log's last entry, which a purge removed, learns that its
// state went: the log ends where the copy does, but holds nothing.
func TestCopyAtEndOfEmptiedLog(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	log.Purge()
	if err := s.Fetch(ctx); !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("Fetch of a log emptied at the copy's revision: %v, want ErrEmptied", err)
	}
	if _, rev := s.State(); rev != 0 {
		t.Fatalf("the copy kept a state at %d", rev)
	}
}

// A write from a copy at the log's last entry, which a purge removed,
// lands nothing (its update would follow no state) and drops the copy;
// the next Initialize starts the log again after the purged entries.
func TestWriteFromCopyOfEmptiedLog(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	log.Purge()
	if _, err := increment(ctx, s); !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("a write from a copy of a purged log: %v, want ErrEmptied", err)
	}
	if last := lastRevision(t, log); last != 2 {
		t.Fatalf("the log ends at %d, want 2: nothing written", last)
	}
	if err := s.Initialize(ctx, start(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	if st, rev := newCounter(t, log).State(); st != 1 || rev != 4 {
		t.Fatalf("a new reader has %d at %d, want 1 at 4", st, rev)
	}
}

// A try that lost, whose catch-up then failed (here: the log was emptied
// under the copy), is the write's last: its Attempt says it stopped, so
// that a trace does not say it is "trying again" right before the error.
func TestTraceOfLostTryWhoseCatchUpFailed(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	var tries []statesync.Attempt
	s := newCounter(t, log, statesync.WithTrace(func(a statesync.Attempt) { tries = append(tries, a) }))
	other := newCounter(t, log)
	if _, err := increment(ctx, other); err != nil {
		t.Fatal(err)
	}
	log.Purge()
	if _, err := increment(ctx, s); !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("a write from a copy of a log since emptied: %v, want ErrEmptied", err)
	}
	if len(tries) != 1 || tries[0].Conflict == nil || !tries[0].Stopped {
		t.Fatalf("tries %+v, want one conflict that stopped", tries)
	}
}

// A purge that keeps the newest entries, the first of them an update,
// leaves the log's state gone: a copy that read the entries before it
// drops its state rather than take the update as the sequel (no other
// reader could), says so, and writes nothing, until a snapshot comes.
func TestCopyOfLogWhoseStateIsGone(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	other := newCounter(t, log)
	for range 3 {
		if _, err := increment(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	log.PurgeBefore(3) // keeps the updates at 3 and 4
	for _, sync := range []*statesync.Synchronizer[counter]{s, statesync.New[counter](log, counterCodec)} {
		err := sync.Fetch(ctx)
		var entryErr *statesync.EntryError
		if !errors.As(err, &entryErr) || entryErr.Revision != 3 || !errors.Is(err, statesync.ErrStateGone) {
			t.Fatalf("Fetch of a log purged before an update: %v, want ErrStateGone at entry 3", err)
		}
		if st, rev := sync.State(); st != 0 || rev != 0 || !errors.Is(sync.Gone(), statesync.ErrStateGone) {
			t.Fatalf("state %d at %d, gone %v; want none, and gone", st, rev, sync.Gone())
		}
		if _, err := increment(ctx, sync); !errors.Is(err, statesync.ErrStateGone) {
			t.Fatalf("a write on a log whose state is gone: %v, want ErrStateGone", err)
		}
		if err := sync.Initialize(ctx, start(0)); !errors.Is(err, statesync.ErrStateGone) {
			t.Fatalf("Initialize of a log whose state is gone: %v, want ErrStateGone", err)
		}
	}
	if last := lastRevision(t, log); last != 4 {
		t.Fatalf("the log ends at %d, want 4: nothing written", last)
	}
	if _, err := logtest.Compact(log, ctx, 4, []byte(`{"value":7}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if st, rev := s.State(); st != 7 || rev != 5 || s.Gone() != nil {
		t.Fatalf("after a snapshot: %d at %d, gone %v; want 7 at 5", st, rev, s.Gone())
	}
}

// An update that lands after a log was emptied (an unconditional one: a
// conditional append bound to a purged entry is refused) leaves its state
// gone for a copy that took the log for empty, as for a new reader.
func TestUpdateAfterEmptiedLog(t *testing.T) {
	ctx := context.Background()
	log := emptiedLog(t)
	s := statesync.New[counter](log, counterCodec)
	if err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := logtest.Append(log, ctx, 3, []byte(`{"add":[1]}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Fetch(ctx); !errors.Is(err, statesync.ErrStateGone) {
		t.Fatalf("Fetch of an emptied log, then an update: %v, want ErrStateGone", err)
	}
	if err := statesync.New[counter](log, counterCodec).Fetch(ctx); !errors.Is(err, statesync.ErrStateGone) {
		t.Fatalf("a new reader: %v, want ErrStateGone", err)
	}
}

// A copy that held a state from before a purge, reading the log started
// again since, learns that it was purged, not compacted: the snapshot that
// started it again says so, and so does every compaction after it, and a
// checkpoint of a copy taken since (whose own compaction must say it too).
// The read reloads the copy and reports a PurgedError, once.
func TestCopyReadsPurgeAcrossSnapshots(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	old := newCounter(t, log)
	older := newCounter(t, log)
	if _, err := increment(ctx, old); err != nil {
		t.Fatal(err)
	}
	log.Purge() // up to 2
	writer := statesync.New[counter](log, counterCodec)
	if err := writer.Initialize(ctx, start(5)); err != nil {
		t.Fatal(err)
	}
	if writer.Purged() != 2 {
		t.Fatalf("the writer that started the log again met a purge up to %d, want 2", writer.Purged())
	}
	var purged *statesync.PurgedError
	if err := old.Fetch(ctx); !errors.As(err, &purged) || purged.UpTo != 2 || purged.Again != 3 {
		t.Fatalf("a copy from before the purge, reading the log started again: %v, want a PurgedError up to 2, again at 3", err)
	}
	if st, rev := old.State(); st != 5 || rev != 3 || old.Purged() != 2 {
		t.Fatalf("the copy has %d at %d, purge met %d; want 5 at 3, and the purge up to 2", st, rev, old.Purged())
	}
	if err := old.Fetch(ctx); err != nil {
		t.Fatalf("a second read: %v, want nothing said again", err)
	}
	cp, ok, err := old.Checkpoint(func(c counter) statesync.InitialUpdate[counter] { return start(int64(c)) })
	if err != nil || !ok {
		t.Fatalf("Checkpoint: %v, %v", ok, err)
	}
	resumed := statesync.New[counter](log, counterCodec)
	if err := resumed.Resume(cp); err != nil {
		t.Fatal(err)
	}
	if _, err := increment(ctx, resumed); err != nil {
		t.Fatal(err)
	}
	if err := resumed.Compact(ctx, func(c counter) statesync.InitialUpdate[counter] { return start(int64(c)) }); err != nil {
		t.Fatal(err)
	}
	if err := older.Fetch(ctx); !errors.As(err, &purged) || purged.UpTo != 2 || purged.Again != 5 {
		t.Fatalf("a copy from before the purge, reading a later compaction: %v, want a PurgedError up to 2, again at 5", err)
	}
	if st, rev := older.State(); st != 6 || rev != 5 {
		t.Fatalf("the copy has %d at %d, want 6 at 5", st, rev)
	}
	fresh := statesync.New[counter](log, counterCodec)
	if err := fresh.Fetch(ctx); err != nil || fresh.Purged() != 0 {
		t.Fatalf("a new copy: %v, purge met %d; want nothing said: it held nothing the purge took", err, fresh.Purged())
	}
}

// A copy that found its log emptied, and then starts the log created again
// under its name, records no purge: the new log had none.
func TestInitializeRecreatedLogRecordsNoPurge(t *testing.T) {
	ctx := context.Background()
	log := emptiedLog(t)
	s := statesync.New[counter](log, counterCodec)
	if err := s.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	log.Recreate()
	if err := s.Initialize(ctx, start(0)); err != nil {
		t.Fatal(err)
	}
	err := logtest.Read(log, ctx, 0, 1, func(e statesync.Entry) error {
		if e.Purged != 0 {
			t.Errorf("the first snapshot of the log created again says it was purged up to %d", e.Purged)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A copy whose own entry a purge kept (nats stream purge --keep 1) reads on
// and writes on after it, unaware: nothing it reads or appends tells. When
// a snapshot that records the purge comes (a repair), it learns that
// entries its state stems from were purged, though it stood past them.
func TestCopyPastAPurgeLearnsOfIt(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	for range 2 {
		if _, err := increment(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	log.PurgeBefore(3) // keeps s's entry at 3
	if _, err := increment(ctx, s); err != nil {
		t.Fatalf("a write after its own entry, which the purge kept: %v", err)
	}
	// A repair's snapshot, after the entries left.
	if _, err := log.CompactAfter(statesync.PurgedContext(ctx, 2), statesync.Position{Revision: 4}, []byte(`{"value":2}`)); err != nil {
		t.Fatal(err)
	}
	var purged *statesync.PurgedError
	if err := s.Fetch(ctx); !errors.As(err, &purged) || purged.UpTo != 2 {
		t.Fatalf("the copy that stood past the purge, reading a snapshot that records it: %v, want a PurgedError up to 2", err)
	}
}

// A copy a read left emptied (the log purged by hand) appends no update,
// whatever part of a write made that read: a handed write reading the
// entry an answer named ignores what the read says, then tries on its
// own. Bound to the copy's revision alone, its update landed after the
// purge, and every reader then found the log's state unknown (seen with
// combining shells and a purge by hand).
func TestNoUpdateFromAnEmptiedCopy(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	log.Purge()
	var purged *statesync.PurgedError
	if err := s.Fetch(ctx); !errors.As(err, &purged) {
		t.Fatalf("the read after the purge: %v, want a PurgedError", err)
	}
	_, err := statesync.CommitOnCopy(ctx, s, add{N: 1})
	if !errors.As(err, &purged) || purged.UpTo != 2 || !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("an update on the emptied copy: %v, want a PurgedError up to 2", err)
	}
	// A write that finds the copy so says why, as the read did, rather
	// than "call Initialize first", which its user cannot do.
	if _, err := increment(ctx, s); !errors.As(err, &purged) || purged.UpTo != 2 {
		t.Fatalf("a write on the emptied copy: %v, want a PurgedError up to 2", err)
	}
	if last := lastRevision(t, log); last != 2 {
		t.Fatalf("the log ends at %d, want 2: nothing written", last)
	}
	if err := newCounter(t, log).Fetch(ctx); err != nil {
		t.Fatalf("a new reader: %v", err)
	}
}
