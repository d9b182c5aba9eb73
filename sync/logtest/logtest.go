// Package logtest is the conformance suite for implementations of
// statesync.Log: every log must pass Run.
package logtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Run checks the Log contract on logs made by newLog, one fresh empty log per
// subtest.
func Run(t *testing.T, newLog func(t *testing.T) statesync.Log) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, newLog(t)) })
	t.Run("ConditionalAppend", func(t *testing.T) { testConditionalAppend(t, newLog(t)) })
	t.Run("UnconditionalAppend", func(t *testing.T) { testUnconditionalAppend(t, newLog(t)) })
	t.Run("ReadRange", func(t *testing.T) { testReadRange(t, newLog(t)) })
	t.Run("Compact", func(t *testing.T) { testCompact(t, newLog(t)) })
	t.Run("CompactConflict", func(t *testing.T) { testCompactConflict(t, newLog(t)) })
	t.Run("ReadRangeCompactedAway", func(t *testing.T) { testReadRangeCompactedAway(t, newLog(t)) })
	t.Run("LargeSnapshot", func(t *testing.T) { testLargeSnapshot(t, newLog(t)) })
	t.Run("LargeSnapshotReadFromInside", func(t *testing.T) { testLargeSnapshotReadFromInside(t, newLog(t)) })
	t.Run("ConcurrentAppends", func(t *testing.T) { testConcurrentAppends(t, newLog(t)) })
	t.Run("ReadStopsOnError", func(t *testing.T) { testReadStopsOnError(t, newLog(t)) })
	t.Run("ReadBounds", func(t *testing.T) { testReadBounds(t, newLog(t)) })
	t.Run("ReadInsideRead", func(t *testing.T) { testReadInsideRead(t, newLog(t)) })
	t.Run("ReadsDoNotWaitForCallbacks", func(t *testing.T) { testReadsDoNotWaitForCallbacks(t, newLog(t)) })
	t.Run("Announce", func(t *testing.T) { testAnnounce(t, newLog(t)) })
	t.Run("Speaker", func(t *testing.T) { testSpeaker(t, newLog(t)) })
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustAppend(t *testing.T, l statesync.Log, expected uint64, data string) uint64 {
	t.Helper()
	rev, err := Append(l, ctx(t), expected, []byte(data))
	if err != nil {
		t.Fatalf("Append(%d, %q): %v", expected, data, err)
	}
	return rev
}

func readAll(t *testing.T, l statesync.Log, after, upTo uint64) []statesync.Entry {
	t.Helper()
	var got []statesync.Entry
	err := Read(l, ctx(t), after, upTo, func(e statesync.Entry) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Read(%d, %d): %v", after, upTo, err)
	}
	return got
}

func describe(es []statesync.Entry) string {
	var b bytes.Buffer
	for _, e := range es {
		kind := "u"
		if e.Snapshot {
			kind = "s"
		}
		data := string(e.Data)
		if len(data) > 20 {
			data = fmt.Sprintf("<%d bytes>", len(data))
		}
		fmt.Fprintf(&b, "%d%s:%s ", e.Revision, kind, data)
	}
	return b.String()
}

func expectEntries(t *testing.T, got []statesync.Entry, want string) {
	t.Helper()
	if d := describe(got); d != want {
		t.Errorf("entries:\n got  %s\n want %s", d, want)
	}
}

func lastRevision(t *testing.T, l statesync.Log) uint64 {
	t.Helper()
	last, err := LastRevision(l, ctx(t))
	if err != nil {
		t.Fatalf("LastRevision: %v", err)
	}
	return last
}

func testEmpty(t *testing.T, l statesync.Log) {
	if last := lastRevision(t, l); last != 0 {
		t.Fatalf("LastRevision of an empty log = %d, want 0", last)
	}
	expectEntries(t, readAll(t, l, 0, 0), "")
}

func testConditionalAppend(t *testing.T, l statesync.Log) {
	if rev := mustAppend(t, l, 0, "a"); rev != 1 {
		t.Fatalf("first append landed at %d, want 1", rev)
	}
	if rev := mustAppend(t, l, 1, "b"); rev != 2 {
		t.Fatalf("second append landed at %d, want 2", rev)
	}
	_, err := Append(l, ctx(t), 1, []byte("stale"))
	var conflict *statesync.ConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("append at a stale revision: got %v, want a *ConflictError", err)
	}
	if conflict.Current != 0 && conflict.Current != 2 {
		t.Errorf("conflict = %+v, want current 2 (or unknown)", conflict)
	}
	if _, err := Append(l, ctx(t), 5, []byte("ahead")); !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("append at a revision past the end: got %v, want a conflict", err)
	}
	if last := lastRevision(t, l); last != 2 {
		t.Fatalf("LastRevision = %d after refused appends, want 2", last)
	}
	expectEntries(t, readAll(t, l, 0, 2), "1u:a 2u:b ")
}

func testUnconditionalAppend(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "a")
	if rev := mustAppend(t, l, statesync.AnyRevision, "b"); rev != 2 {
		t.Fatalf("unconditional append landed at %d, want 2", rev)
	}
	expectEntries(t, readAll(t, l, 0, 2), "1u:a 2u:b ")
}

func testReadRange(t *testing.T, l statesync.Log) {
	for i := range uint64(300) {
		mustAppend(t, l, i, fmt.Sprint(i+1))
	}
	got := readAll(t, l, 0, 300)
	if len(got) != 300 {
		t.Fatalf("read %d entries, want 300", len(got))
	}
	for i, e := range got {
		if e.Revision != uint64(i+1) || string(e.Data) != fmt.Sprint(i+1) || e.Snapshot {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
	expectEntries(t, readAll(t, l, 10, 13), "11u:11 12u:12 13u:13 ")
	expectEntries(t, readAll(t, l, 299, 300), "300u:300 ")
	expectEntries(t, readAll(t, l, 300, 300), "")
}

func testCompact(t *testing.T, l statesync.Log) {
	// A snapshot at 0 initialises an empty log.
	rev, err := Compact(l, ctx(t), 0, []byte("init"))
	if err != nil || rev != 1 {
		t.Fatalf("Compact(0) on an empty log = %d, %v; want 1", rev, err)
	}
	mustAppend(t, l, 1, "a")
	mustAppend(t, l, 2, "b")
	rev, err = Compact(l, ctx(t), 3, []byte("snap"))
	if err != nil {
		t.Fatalf("Compact(3): %v", err)
	}
	if rev <= 3 {
		t.Fatalf("snapshot revision %d, want > 3", rev)
	}
	if last := lastRevision(t, l); last != rev {
		t.Fatalf("LastRevision = %d, want the snapshot's %d", last, rev)
	}
	mustAppend(t, l, rev, "c")
	want := fmt.Sprintf("%ds:snap %du:c ", rev, rev+1)
	// A reader from before the compaction resumes at the snapshot.
	expectEntries(t, readAll(t, l, 0, rev+1), want)
	expectEntries(t, readAll(t, l, 2, rev+1), want)
	// A reader that is past the snapshot sees only what follows.
	expectEntries(t, readAll(t, l, rev, rev+1), fmt.Sprintf("%du:c ", rev+1))
}

// A reader whose whole range was compacted away gets the snapshot that
// covers it, though it lies past the range.
func testReadRangeCompactedAway(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "a")
	mustAppend(t, l, 1, "b")
	mustAppend(t, l, 2, "c")
	rev, err := Compact(l, ctx(t), 3, []byte("snap"))
	if err != nil {
		t.Fatal(err)
	}
	expectEntries(t, readAll(t, l, 1, 2), fmt.Sprintf("%ds:snap ", rev))
}

func testCompactConflict(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "a")
	mustAppend(t, l, 1, "b")
	if _, err := Compact(l, ctx(t), 1, []byte("stale snapshot")); !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("Compact at a stale revision: got %v, want a conflict", err)
	}
	expectEntries(t, readAll(t, l, 0, 2), "1u:a 2u:b ")
	if _, err := Compact(l, ctx(t), 0, []byte("init")); !errors.Is(err, statesync.ErrConflict) {
		t.Fatalf("Compact(0) on a non-empty log: got %v, want a conflict", err)
	}
}

// entriesOf is a snapshot of about n of l's largest entries: n MiB on a
// log that says no limit (JetStream's default max payload is 1 MiB), so
// that on a server of a smaller max payload the snapshot is written in as
// many chunks, for less work.
func entriesOf(l statesync.Log, n int) []byte {
	size := n << 20
	if s, ok := l.(interface{ MaxUpdateSize() int }); ok {
		size = n * s.MaxUpdateSize()
	}
	return bytes.Repeat([]byte("0123456789abcdef"), size/16)
}

func testLargeSnapshot(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "a")
	big := entriesOf(l, 5) // 5 MiB, or 5 of the log's largest entries
	big[12345] = 'X'
	rev, err := Compact(l, ctx(t), 1, big)
	if err != nil {
		t.Fatalf("Compact of %d bytes: %v", len(big), err)
	}
	mustAppend(t, l, rev, "after")
	got := readAll(t, l, 0, rev+1)
	if len(got) != 2 || !got[0].Snapshot || got[0].Revision != rev || !bytes.Equal(got[0].Data, big) {
		t.Fatalf("reading back a snapshot of %d bytes: got %s", len(big), describe(got))
	}
	if string(got[1].Data) != "after" {
		t.Fatalf("entry after the snapshot: %s", describe(got[1:]))
	}
}

// A read that starts after some of a snapshot's entries (a follower that
// read while it was being written) still gets the snapshot whole: it may
// hold state nothing before it does.
func testLargeSnapshotReadFromInside(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "a")
	big := entriesOf(l, 3) // 3 MiB, or 3 of the log's largest entries
	big[len(big)-1] = 'X'
	rev, err := Compact(l, ctx(t), 1, big)
	if err != nil {
		t.Fatalf("Compact of %d bytes: %v", len(big), err)
	}
	for after := uint64(1); after < rev; after++ {
		got := readAll(t, l, after, rev)
		if len(got) != 1 || !got[0].Snapshot || got[0].Revision != rev || !bytes.Equal(got[0].Data, big) {
			t.Fatalf("reading after %d up to the snapshot at %d: got %s, want the snapshot whole", after, rev, describe(got))
		}
	}
}

func testConcurrentAppends(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "base")
	const writers = 8
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			_, err := Append(l, ctx(t), 1, []byte(fmt.Sprint("w", i)))
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, statesync.ErrConflict):
			t.Errorf("concurrent append: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d appends at the same revision landed, want exactly 1", won, writers)
	}
	if last := lastRevision(t, l); last != 2 {
		t.Fatalf("LastRevision = %d, want 2", last)
	}
}

func testReadStopsOnError(t *testing.T, l statesync.Log) {
	for i := range uint64(5) {
		mustAppend(t, l, i, "x")
	}
	stop := errors.New("stop")
	n := 0
	err := Read(l, ctx(t), 0, 5, func(statesync.Entry) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Fatalf("Read returned %v after %d entries, want the callback's error after 2", err, n)
	}
}

func testReadBounds(t *testing.T, l statesync.Log) {
	mustAppend(t, l, 0, "a")
	mustAppend(t, l, 1, "b")
	calls := 0
	count := func(statesync.Entry) error { calls++; return nil }
	if err := Read(l, ctx(t), 1, 1, count); err != nil || calls != 0 {
		t.Fatalf("Read(1, 1) = %v after %d entries; want an empty success", err, calls)
	}
	if err := Read(l, ctx(t), 2, 1, count); err == nil || calls != 0 {
		t.Fatalf("Read(2, 1) = %v after %d entries; want an error (the end is before the start)", err, calls)
	}
}

// hangLimit is how long a test waits for a read that should end long before
// it, so that a read that hangs fails the test instead of stalling the suite.
const hangLimit = 20 * time.Second

// finishes runs read and fails the test if it does not end within hangLimit.
func finishes(t *testing.T, what string, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangLimit):
		t.Fatalf("%s did not end within %s: it waits for another read", what, hangLimit)
		return nil
	}
}

// A Read whose callback reads the same log completes.
func testReadInsideRead(t *testing.T, l statesync.Log) {
	for i := range uint64(3) {
		mustAppend(t, l, i, fmt.Sprint("e", i+1))
	}
	var inner []statesync.Entry
	c := ctx(t)
	err := finishes(t, "a Read inside a Read's callback", func() error {
		return Read(l, c, 0, 3, func(e statesync.Entry) error {
			if e.Revision != 2 {
				return nil
			}
			return Read(l, c, 0, 3, func(e statesync.Entry) error {
				inner = append(inner, e)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	expectEntries(t, inner, "1u:e1 2u:e2 3u:e3 ")
}

// While one Read is inside its callback, other Reads on the log complete,
// and one whose context is cancelled returns at once with the context's
// error.
func testReadsDoNotWaitForCallbacks(t *testing.T, l statesync.Log) {
	for i := range uint64(3) {
		mustAppend(t, l, i, fmt.Sprint("e", i+1))
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	releaseOnce := func() { once.Do(func() { close(release) }) }
	defer releaseOnce()
	blocked := make(chan error, 1)
	c := ctx(t)
	go func() {
		blocked <- Read(l, c, 0, 3, func(e statesync.Entry) error {
			if e.Revision == 1 {
				close(inside)
				<-release
			}
			return nil
		})
	}()
	<-inside
	var got []statesync.Entry
	err := finishes(t, "a Read while another is in its callback", func() error {
		return Read(l, c, 1, 3, func(e statesync.Entry) error {
			got = append(got, e)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	expectEntries(t, got, "2u:e2 3u:e3 ")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err = finishes(t, "a cancelled Read while another is in its callback", func() error {
		return Read(l, cancelled, 0, 3, func(statesync.Entry) error { return nil })
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context = %v, want context.Canceled", err)
	}
	releaseOnce()
	if err := <-blocked; err != nil {
		t.Fatalf("the blocked Read: %v", err)
	}
}

// testAnnounce: a log that can carry words between writers brings each word
// to every listener, and none after it stopped listening; words are not
// entries.
func testAnnounce(t *testing.T, l statesync.Log) {
	a, ok := l.(turns.Announcer)
	if !ok {
		t.Skip("the log does not implement Announcer")
	}
	before := lastRevision(t, l)
	heard := make(chan string, 10)
	var listeners []func()
	for i := range 2 {
		stop, err := a.Listen(func(w []byte) { heard <- fmt.Sprintf("%d:%s", i, w) })
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, stop)
	}
	if err := a.Announce([]byte("wait w1 7")); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case w := <-heard:
			got[w] = true
		case <-ctx(t).Done():
			t.Fatalf("heard only %v", got)
		}
	}
	if !got["0:wait w1 7"] || !got["1:wait w1 7"] {
		t.Fatalf("heard %v", got)
	}
	listeners[0]()
	// A word after the first stopped reaches only the second; words keep
	// their order from one announcer.
	for _, w := range []string{"x", "done w1"} {
		if err := a.Announce([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"1:x", "1:done w1"} {
		select {
		case w := <-heard:
			if w != want {
				t.Fatalf("heard %q, want %q", w, want)
			}
		case <-ctx(t).Done():
			t.Fatalf("did not hear %q", want)
		}
	}
	listeners[1]()
	if got := lastRevision(t, l); got != before {
		t.Fatalf("announcing moved the log from %d to %d", before, got)
	}
}

// testSpeaker: a log that carries words records with each entry the
// speaker its append was made for, the evidence that a waiter writes.
func testSpeaker(t *testing.T, l statesync.Log) {
	if _, ok := l.(turns.Announcer); !ok {
		t.Skip("the log does not implement Announcer")
	}
	rev, err := Append(l, turns.SpeakerContext(ctx(t), "w1"), statesync.AnyRevision, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := Read(l, ctx(t), rev-1, rev, func(e statesync.Entry) error {
		got = append(got, e.Speaker)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "w1" {
		t.Fatalf("speakers read %q, want [w1]", got)
	}
}
