package statesync_test

import (
	"context"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// foreignLog delivers the entries whose data is "foreign" as foreign ones,
// as a log does for entries another program wrote.
type foreignLog struct{ *memlog.Log }

func (l foreignLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	return l.Log.ReadAfter(ctx, after, upTo, foreignToo(fn))
}

// foreignToo delivers the entries whose data is "foreign" to fn as foreign.
func foreignToo(fn func(statesync.Entry) error) func(statesync.Entry) error {
	return func(e statesync.Entry) error {
		if string(e.Data) == "foreign" {
			e = statesync.Entry{Position: e.Position, Foreign: "written by someone else"}
		}
		return fn(e)
	}
}

// A foreign entry holds no state: the synchronizer steps over it, tells
// watchers, and writes go on after it.
func TestForeignEntriesAreSteppedOver(t *testing.T) {
	ctx := context.Background()
	log := foreignLog{memlog.New("t")}
	var heard []statesync.Entry
	s := newCounter(t, log, statesync.WithApplied(func(a statesync.Applied[counter]) { heard = append(heard, a.Entry) }))
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	rev, err := logtest.Append(log, ctx, statesync.AnyRevision, []byte("foreign"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := increment(ctx, s); err != nil {
		t.Fatalf("a write after a foreign entry: %v", err)
	}
	st, at := s.State()
	if st != 2 || at != rev+1 {
		t.Fatalf("state %d at revision %d; want 2 at %d", st, at, rev+1)
	}
	found := false
	for _, e := range heard {
		found = found || e.Revision == rev && e.Foreign != ""
	}
	if !found {
		t.Fatalf("watchers heard %+v; want the foreign entry %d", heard, rev)
	}
}
