package logtest

import (
	"context"
	"errors"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// RunEmptied checks how a log presents itself once every entry was removed
// with no snapshot in their place (a JetStream stream purged by hand), on
// logs made by newLog, one fresh empty log per subtest. empty removes every
// entry and leaves the revisions where they were.
func RunEmptied(t *testing.T, newLog func(t *testing.T) (l statesync.Log, empty func())) {
	run := func(name string, test func(*testing.T, statesync.Log, func())) {
		t.Run(name, func(t *testing.T) {
			l, empty := newLog(t)
			test(t, l, empty)
		})
	}
	run("ReadSaysEmptied", testReadSaysEmptied)
	run("ReadAtEndSaysEmptied", testReadAtEndSaysEmptied)
	run("SnapshotAfterEmptied", testSnapshotAfterEmptied)
	run("UpdateAfterEmptied", testUpdateAfterEmptied)
	run("AppendAfterPurgedEntry", testAppendAfterPurgedEntry)
	run("UpdateAfterPurgedEntry", testUpdateAfterPurgedEntry)
	run("UnconditionalAfterEmptied", testUnconditionalAfterEmptied)
}

// emptiedWithin bounds a read of an emptied log: it must learn that the
// entries are gone, not wait for them as for a lagging replica.
const emptiedWithin = 5 * time.Second

// readEmptied reads after after up to upTo and returns the error, failing
// the test if any entry is delivered.
func readEmptied(t *testing.T, l statesync.Log, after statesync.Position, upTo uint64) error {
	t.Helper()
	c, cancel := context.WithTimeout(ctx(t), emptiedWithin)
	defer cancel()
	var got []statesync.Entry
	err := l.ReadAfter(c, after, upTo, func(e statesync.Entry) error { got = append(got, e); return nil })
	if len(got) > 0 {
		t.Errorf("ReadAfter(%+v, %d) of an emptied log delivered %s", after, upTo, describe(got))
	}
	return err
}

// An emptied log still ends where its revisions went; a read of entries
// that are gone says so at once, whether bound to one of them or not, and
// a read of nothing reads nothing.
func testReadSaysEmptied(t *testing.T, l statesync.Log, empty func()) {
	first := appendN(t, l, statesync.Position{}, 2)
	appendN(t, l, first, 1)
	empty()
	last, err := l.LastPosition(ctx(t))
	if err != nil || last.Revision != 3 {
		t.Fatalf("LastPosition of an emptied log = %+v, %v; want revision 3", last, err)
	}
	for _, after := range []statesync.Position{{}, {Revision: 1}, first} {
		if err := readEmptied(t, l, after, 3); !errors.Is(err, statesync.ErrEmptied) {
			t.Fatalf("ReadAfter(%+v, 3) of an emptied log: %v; want ErrEmptied", after, err)
		}
	}
	if err := readEmptied(t, l, statesync.Position{Revision: 3}, 3); err != nil {
		t.Fatalf("ReadAfter(3, 3) of an emptied log: %v; want nothing read", err)
	}
}

// A read bound to the log's last entry, which is gone, says so: a copy at
// the log's end learns that its state went.
func testReadAtEndSaysEmptied(t *testing.T, l statesync.Log, empty func()) {
	last := appendN(t, l, statesync.Position{}, 2)
	empty()
	if err := readEmptied(t, l, last, 2); !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("ReadAfter(%+v, 2) of an emptied log: %v; want ErrEmptied", last, err)
	}
}

// A snapshot after the emptied revisions covers them: the log holds state
// again, for readers from anywhere before it.
func testSnapshotAfterEmptied(t *testing.T, l statesync.Log, empty func()) {
	appendN(t, l, statesync.Position{}, 3)
	empty()
	at, err := l.CompactAfter(ctx(t), statesync.Position{Revision: 3}, []byte("init"))
	if err != nil || at.Revision != 4 {
		t.Fatalf("CompactAfter(3) on an emptied log: %+v, %v; want revision 4", at, err)
	}
	expectEntries(t, readAll(t, l, 0, 4), "4s:init ")
	expectEntries(t, readAll(t, l, 1, 3), "4s:init ")
}

// An update after the emptied revisions follows a gap no snapshot covers:
// the state it changes is gone, and the log says so of that entry (not
// ErrEmptied: the log holds an entry there).
func testUpdateAfterEmptied(t *testing.T, l statesync.Log, empty func()) {
	appendN(t, l, statesync.Position{}, 3)
	empty()
	if _, err := Append(l, ctx(t), 3, []byte("u")); err != nil {
		t.Fatal(err)
	}
	expectStateGone(t, readEmptied(t, l, statesync.Position{}, 4), 4)
}

// An update first after a read's own entry, which is gone, follows a gap
// too: compaction would have left a snapshot there. Only a read with no
// entry to check takes the update as the sequel.
func testUpdateAfterPurgedEntry(t *testing.T, l statesync.Log, empty func()) {
	last := appendN(t, l, statesync.Position{}, 2)
	empty()
	if _, err := Append(l, ctx(t), 2, []byte("u")); err != nil {
		t.Fatal(err)
	}
	expectStateGone(t, readEmptied(t, l, last, 3), 3)
	expectEntries(t, readAll(t, l, 2, 3), "3u:u ")
}

// expectStateGone fails the test unless err is an *EntryError for the
// update at rev wrapping ErrStateGone.
func expectStateGone(t *testing.T, err error, rev uint64) {
	t.Helper()
	var entryErr *statesync.EntryError
	if !errors.As(err, &entryErr) || entryErr.Revision != rev || !errors.Is(err, statesync.ErrStateGone) || errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("reading an update after removed entries: %v; want an EntryError for entry %d wrapping ErrStateGone", err, rev)
	}
}

// An append bound to the entry the log ended at, which is gone, lands
// nothing: the writer's state is not the log's any more.
func testAppendAfterPurgedEntry(t *testing.T, l statesync.Log, empty func()) {
	last := appendN(t, l, statesync.Position{}, 2)
	empty()
	if _, err := l.AppendAfter(ctx(t), last, []byte("u")); !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("AppendAfter(%+v) on a log emptied there: %v; want a conflict", last, err)
	}
	if _, err := l.CompactAfter(ctx(t), last, []byte("s")); !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("CompactAfter(%+v) on a log emptied there: %v; want a conflict", last, err)
	}
	if got := lastRevision(t, l); got != 2 {
		t.Fatalf("LastRevision = %d after refused appends, want 2", got)
	}
}

// An unconditional append after the emptied revisions (a lease refresh
// sent as the purge happened) holds no state of its own: the log still
// reads as emptied, to a reader from before the gap or bound to a purged
// entry; a reader right after the purge gets it, marked unconditional. A
// conditional update after it still finds the state gone.
func testUnconditionalAfterEmptied(t *testing.T, l statesync.Log, empty func()) {
	last := appendN(t, l, statesync.Position{}, 2)
	empty()
	if _, err := l.AppendAfter(ctx(t), statesync.Position{Revision: statesync.AnyRevision}, []byte("r")); err != nil {
		t.Fatal(err)
	}
	for _, after := range []statesync.Position{{}, last} {
		if err := readEmptied(t, l, after, 3); !errors.Is(err, statesync.ErrEmptied) {
			t.Fatalf("ReadAfter(%+v, 3) with an unconditional update after a gap: %v; want ErrEmptied", after, err)
		}
	}
	got := readAll(t, l, 2, 3)
	if len(got) != 1 || got[0].Revision != 3 || !got[0].Unconditional {
		t.Fatalf("ReadAfter(2, 3): %+v; want the update at 3, marked unconditional", got)
	}
	if _, err := Append(l, ctx(t), 3, []byte("u")); err != nil {
		t.Fatal(err)
	}
	expectStateGone(t, readEmptied(t, l, statesync.Position{}, 4), 4)
}
