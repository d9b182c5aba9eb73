package statesync_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// countingLog counts the entries its reads deliver.
type countingLog struct {
	*memlog.Log
	delivered int
}

func (l *countingLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	return l.Log.ReadAfter(ctx, after, upTo, l.counted(fn))
}

func (l *countingLog) counted(fn func(statesync.Entry) error) func(statesync.Entry) error {
	return func(e statesync.Entry) error {
		l.delivered++
		return fn(e)
	}
}

func counterSnapshot(c counter) statesync.InitialUpdate[counter] { return start(int64(c)) }

// checkpointOf is a checkpoint of a reader that has read log to its end.
func checkpointOf(t *testing.T, log statesync.Log) []byte {
	t.Helper()
	reader := statesync.New[counter](log, counterCodec)
	defer reader.Close()
	if err := reader.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, ok, err := reader.Checkpoint(counterSnapshot)
	if err != nil || !ok {
		t.Fatalf("Checkpoint after a read: ok %v, %v", ok, err)
	}
	return data
}

// A synchronizer resumed from a checkpoint reads only the entries appended
// after it, and ends at the state a full read gives.
func TestResumeReadsOnlyLaterEntries(t *testing.T) {
	ctx := context.Background()
	log := &countingLog{Log: memlog.New("t")}
	w := newCounter(t, log)
	defer w.Close()
	for range 50 {
		if _, err := increment(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	cp := checkpointOf(t, log)
	for range 3 {
		if _, err := increment(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	r := statesync.New[counter](log, counterCodec)
	defer r.Close()
	if err := r.Resume(cp); err != nil {
		t.Fatal(err)
	}
	log.delivered = 0
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if v := value(t, r); v != 53 {
		t.Fatalf("resumed copy holds %d, want 53", v)
	}
	if log.delivered != 3 {
		t.Fatalf("the resumed copy's fetch read %d entries, want the 3 after the checkpoint", log.delivered)
	}
	if stored, _ := r.LastLogTime(); stored.IsZero() {
		t.Fatal("the resumed copy knows no log time")
	}
}

// A checkpoint of one incarnation of a log is never mixed into another:
// whether the new log is shorter, as long, or longer, the resumed copy's
// first fetch reports ErrReplaced and holds the new log's state.
func TestResumeFromAnotherIncarnationIsReloaded(t *testing.T) {
	for _, newWrites := range []int{1, 4, 9} {
		t.Run(fmt.Sprintf("new log at %d", 1+newWrites), func(t *testing.T) {
			ctx := context.Background()
			log := memlog.New("t")
			old := newCounter(t, log)
			for range 4 {
				if _, err := increment(ctx, old); err != nil {
					t.Fatal(err)
				}
			}
			old.Close()
			cp := checkpointOf(t, log) // at revision 5, value 4
			log.Recreate()
			fresh := statesync.New[counter](log, counterCodec)
			defer fresh.Close()
			if err := fresh.Initialize(ctx, start(1000)); err != nil {
				t.Fatal(err)
			}
			for range newWrites {
				if _, err := increment(ctx, fresh); err != nil {
					t.Fatal(err)
				}
			}
			r := statesync.New[counter](log, counterCodec)
			defer r.Close()
			if err := r.Resume(cp); err != nil {
				t.Fatal(err)
			}
			if err := r.Fetch(ctx); !errors.Is(err, statesync.ErrReplaced) {
				t.Fatalf("fetch of a resumed copy of the old log: %v, want ErrReplaced", err)
			}
			if v, want := value(t, r), counter(1000+newWrites); v != want {
				t.Fatalf("resumed copy holds %d after the reload, want the new log's %d", v, want)
			}
		})
	}
}

// Bytes that are not a whole checkpoint (every prefix of one, other bytes,
// a header without a position) are refused without a panic and leave the
// synchronizer without a state, to load as usual.
func TestResumeRefusesWhatIsNotACheckpoint(t *testing.T) {
	log := memlog.New("t")
	w := newCounter(t, log)
	defer w.Close()
	if _, err := increment(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	cp := checkpointOf(t, log)
	bad := [][]byte{nil, []byte("garbage"), []byte("statesync-checkpoint 1\n{}\n{\"value\":1}"),
		[]byte("statesync-checkpoint 1\n{\"revision\":2,\"id\":\"1.2\",\"compacted_at\":3,\"time\":\"2026-01-01T00:00:00Z\"}\n{\"value\":1}")}
	for i := range len(cp) - 1 {
		bad = append(bad, cp[:i])
	}
	for _, b := range bad {
		r := statesync.New[counter](log, counterCodec)
		if err := r.Resume(b); err == nil {
			t.Errorf("Resume(%q) took it", b)
		}
		if _, rev := r.State(); rev != 0 {
			t.Errorf("Resume(%q) left a state", b)
		}
		r.Close()
	}
}

// A copy whose last entry is its own, not read back, has no log time for
// that entry: it makes no checkpoint, which would tell a resumed process a
// log clock older than the entry it stands on.
func TestNoCheckpointWithoutTheLogTimeOfTheLastEntry(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	other := newCounter(t, log)
	defer other.Close()
	if _, err := increment(ctx, other); err != nil {
		t.Fatal(err)
	}
	w := statesync.New[counter](log, counterCodec)
	defer w.Close()
	if err := w.Fetch(ctx); err != nil { // reads revision 2, with its time
		t.Fatal(err)
	}
	if _, err := increment(ctx, w); err != nil { // revision 3, not read back
		t.Fatal(err)
	}
	if _, ok, err := w.Checkpoint(counterSnapshot); ok || err != nil {
		t.Fatalf("Checkpoint after an own write: ok %v, %v; want none", ok, err)
	}
}

// FuzzResume: bytes given as a checkpoint (a cache file anyone with the
// user's rights could have changed) never panic the synchronizer, neither
// when it resumes from them nor when it reads on from there.
func FuzzResume(f *testing.F) {
	ctx := context.Background()
	log := memlog.New("t")
	w := statesync.New[counter](log, counterCodec)
	if err := w.Initialize(ctx, start(0)); err != nil {
		f.Fatal(err)
	}
	for range 3 {
		if _, err := increment(ctx, w); err != nil {
			f.Fatal(err)
		}
	}
	w.Close()
	reader := statesync.New[counter](log, counterCodec)
	if err := reader.Fetch(ctx); err != nil {
		f.Fatal(err)
	}
	good, ok, err := reader.Checkpoint(counterSnapshot)
	reader.Close()
	if err != nil || !ok {
		f.Fatalf("Checkpoint: ok %v, %v", ok, err)
	}
	f.Add(good)
	f.Add([]byte("not a checkpoint"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := statesync.New[counter](log, counterCodec)
		defer r.Close()
		_, _ = statesync.CheckpointBase(data)
		if r.Resume(data) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = r.Fetch(ctx)
	})
}
