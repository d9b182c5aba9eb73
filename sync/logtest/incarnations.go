package logtest

import (
	"errors"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// RunIncarnations checks the incarnation contract of statesync.Log (the methods that take a Position) on logs made by newLog,
// one fresh empty log per subtest. recreate deletes the log and creates it
// again under its name; the log returned keeps working on whatever stands
// under that name.
func RunIncarnations(t *testing.T, newLog func(t *testing.T) (l statesync.Log, recreate func())) {
	run := func(name string, test func(*testing.T, statesync.Log, func())) {
		t.Run(name, func(t *testing.T) {
			l, recreate := newLog(t)
			test(t, l, recreate)
		})
	}
	run("IDsAreNeverReused", testIDsAreNeverReused)
	run("AppendAfterIsBound", testAppendAfterIsBound)
	run("CompactAfterIsBound", testCompactAfterIsBound)
	run("ReadAfterIsBound", testReadAfterIsBound)
	run("ReadAfterCompactedAway", testReadAfterCompactedAway)
}

// appendN appends n entries after last with AppendAfter and returns the
// last one's position.
func appendN(t *testing.T, l statesync.Log, last statesync.Position, n int) statesync.Position {
	t.Helper()
	for range n {
		at, err := l.AppendAfter(ctx(t), last, []byte("x"))
		if err != nil {
			t.Fatalf("AppendAfter(%+v): %v", last, err)
		}
		if at.Revision != last.Revision+1 || at.ID == "" {
			t.Fatalf("AppendAfter(%+v) landed at %+v, want revision %d with an ID", last, at, last.Revision+1)
		}
		last = at
	}
	return last
}

// ids returns the IDs of the entries of l, by revision, and checks that
// they are the positions the appends returned.
func ids(t *testing.T, l statesync.Log, upTo uint64) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	for _, e := range readAll(t, l, 0, upTo) {
		if e.ID == "" {
			t.Fatalf("entry %d was read without an ID", e.Revision)
		}
		out[e.Revision] = e.ID
	}
	return out
}

func testIDsAreNeverReused(t *testing.T, l statesync.Log, recreate func()) {
	last := appendN(t, l, statesync.Position{}, 3)
	before := ids(t, l, 3)
	if before[3] != last.ID {
		t.Fatalf("entry 3 was read with ID %q, but its append returned %q", before[3], last.ID)
	}
	recreate()
	appendN(t, l, statesync.Position{}, 3)
	seen := map[string]bool{}
	for rev, id := range before {
		seen[id] = true
		if rev > 1 && id == before[rev-1] {
			t.Fatalf("entries %d and %d share the ID %q", rev-1, rev, id)
		}
	}
	for rev, id := range ids(t, l, 3) {
		if seen[id] {
			t.Fatalf("entry %d of the new incarnation has the ID %q of an entry of the old one", rev, id)
		}
	}
}

// replacedAtSameRevision leaves the log recreated and as long as it was:
// it returns the old incarnation's last position and the new one's.
func replacedAtSameRevision(t *testing.T, l statesync.Log, recreate func()) (old, current statesync.Position) {
	old = appendN(t, l, statesync.Position{}, 3)
	recreate()
	return old, appendN(t, l, statesync.Position{}, 3)
}

func testAppendAfterIsBound(t *testing.T, l statesync.Log, recreate func()) {
	old, current := replacedAtSameRevision(t, l, recreate)
	if _, err := l.AppendAfter(ctx(t), old, []byte("stale")); !errors.Is(err, statesync.ErrReplaced) {
		t.Fatalf("AppendAfter an entry of the old incarnation, at the new one's last revision: %v, want ErrReplaced", err)
	}
	if last := lastRevision(t, l); last != 3 {
		t.Fatalf("LastRevision = %d after a refused append, want 3", last)
	}
	appendN(t, l, current, 1)
	if _, err := l.AppendAfter(ctx(t), current, []byte("late")); !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("AppendAfter a position the log moved past: %v, want a conflict", err)
	}
}

func testCompactAfterIsBound(t *testing.T, l statesync.Log, recreate func()) {
	old, current := replacedAtSameRevision(t, l, recreate)
	if _, err := l.CompactAfter(ctx(t), old, []byte("stale")); !errors.Is(err, statesync.ErrReplaced) {
		t.Fatalf("CompactAfter an entry of the old incarnation: %v, want ErrReplaced", err)
	}
	expectEntries(t, readAll(t, l, 0, 3), "1u:x 2u:x 3u:x ")
	at, err := l.CompactAfter(ctx(t), current, []byte("snap"))
	if err != nil || at.Revision != 4 || at.ID == "" {
		t.Fatalf("CompactAfter the log's last entry: %+v, %v; want revision 4 with an ID", at, err)
	}
}

func testReadAfterIsBound(t *testing.T, l statesync.Log, recreate func()) {
	old, current := replacedAtSameRevision(t, l, recreate)
	appendN(t, l, current, 2)
	delivered := 0
	err := l.ReadAfter(ctx(t), old, 5, func(statesync.Entry) error { delivered++; return nil })
	if !errors.Is(err, statesync.ErrReplaced) || delivered != 0 {
		t.Fatalf("ReadAfter an entry of the old incarnation: %d entries delivered, %v; want none and ErrReplaced", delivered, err)
	}
	if err := l.ReadAfter(ctx(t), old, 3, func(statesync.Entry) error { return nil }); !errors.Is(err, statesync.ErrReplaced) {
		t.Fatalf("ReadAfter up to the old entry itself: %v, want ErrReplaced", err)
	}
	var got []statesync.Entry
	if err := l.ReadAfter(ctx(t), current, 5, func(e statesync.Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatalf("ReadAfter the log's own entry: %v", err)
	}
	expectEntries(t, got, "4u:x 5u:x ")
}

func testReadAfterCompactedAway(t *testing.T, l statesync.Log, _ func()) {
	first := appendN(t, l, statesync.Position{}, 2)
	last := appendN(t, l, first, 1)
	if _, err := l.CompactAfter(ctx(t), last, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	var got []statesync.Entry
	if err := l.ReadAfter(ctx(t), first, 4, func(e statesync.Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatalf("ReadAfter an entry compacted away: %v", err)
	}
	expectEntries(t, got, "4s:snap ")
}
