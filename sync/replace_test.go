package statesync_test

import (
	"context"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// Replace is conditional: a writer whose copy is behind sees the change it
// missed before its state lands, so that change is not lost; readers take
// the new state in as a snapshot, and hear of it with the state before.
func TestReplaceIsConditional(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	var heard []statesync.Applied[counter]
	reader := newCounter(t, log, statesync.WithApplied(func(a statesync.Applied[counter]) { heard = append(heard, a) }))
	writer := newCounter(t, log)
	other := newCounter(t, log)
	if _, err := increment(ctx, other); err != nil { // writer has not seen it
		t.Fatal(err)
	}
	var seen []counter
	_, after, err := statesync.Replace(ctx, writer, func(c counter) (statesync.InitialUpdate[counter], int) {
		seen = append(seen, c)
		return start(int64(c)*10 + 5), 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if after != 15 || len(seen) != 2 || seen[1] != 1 {
		t.Fatalf("Replace: state %d after it, fn saw %v; want 15, having seen 0 then 1", after, seen)
	}
	_, at := writer.State()
	if err := reader.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := value(t, reader); got != 15 {
		t.Fatalf("a reader's copy is %d, want 15", got)
	}
	last := heard[len(heard)-1]
	if !last.Snapshot || last.After != 15 || last.Revision != at {
		t.Fatalf("the reader heard %+v last, want the snapshot of 15 at %d", last, at)
	}
	if _, err := increment(ctx, writer); err != nil {
		t.Fatal(err)
	}
	if got := value(t, writer); got != 16 {
		t.Fatalf("after the replace and an increment the writer's copy is %d, want 16", got)
	}
}

// A nil InitialUpdate writes nothing.
func TestReplaceWithNothingWritesNothing(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("t")
	s := newCounter(t, log)
	before, _ := logtest.LastRevision(log, ctx)
	if _, _, err := statesync.Replace(ctx, s, func(counter) (statesync.InitialUpdate[counter], bool) { return nil, false }); err != nil {
		t.Fatal(err)
	}
	if after, _ := logtest.LastRevision(log, ctx); after != before {
		t.Fatalf("a Replace with nothing to write moved the log from %d to %d", before, after)
	}
}
