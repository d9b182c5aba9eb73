package sharedconfig_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// watchLog collects what a watch hears, as "revision:op op" lines.
type watchLog struct {
	mu    sync.Mutex
	lines []string
	heard chan struct{}
}

func newWatchLog() *watchLog { return &watchLog{heard: make(chan struct{}, 1000)} }

func (w *watchLog) take(ch sharedconfig.Change) {
	var ops []string
	for _, op := range ch.Ops {
		ops = append(ops, op.String())
	}
	line := fmt.Sprintf("%d:%s", ch.Revision, strings.Join(ops, "; "))
	if ch.Snapshot {
		line += fmt.Sprintf(" (snapshot, %d under the prefix)", ch.Properties)
	}
	if ch.Local {
		line += " (local)"
	}
	w.mu.Lock()
	w.lines = append(w.lines, line)
	w.mu.Unlock()
	w.heard <- struct{}{}
}

// waitFor waits until a line containing s has been heard, and returns all.
func (w *watchLog) waitFor(t *testing.T, s string) []string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		lines := append([]string(nil), w.lines...)
		w.mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, s) {
				return lines
			}
		}
		select {
		case <-w.heard:
		case <-timeout:
			t.Fatalf("the watch did not hear %q; it heard %q", s, lines)
		}
	}
}

func TestWatchShowsOnlyChangesUnderItsPrefix(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	watched, writer := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	heard := newWatchLog()
	stop, err := watched.Watch("app.", heard.take, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	put(t, writer, "other", "1")                           // 2
	put(t, writer, "app.x", "a")                           // 3
	put(t, writer, "apps", "no")                           // 4
	if _, err := writer.Remove(ctx, "app.x"); err != nil { // 5
		t.Fatal(err)
	}
	put(t, writer, "app.y", "b")                 // 6
	if _, err := writer.Clear(ctx); err != nil { // 7: app.y goes
		t.Fatal(err)
	}
	put(t, writer, "other", "2")                 // 8
	if _, err := writer.Clear(ctx); err != nil { // 9: nothing under app.
		t.Fatal(err)
	}
	put(t, watched, "app.mine", "m") // 10, by the watcher itself
	put(t, writer, "app.z", "c")     // 11
	got := heard.waitFor(t, "PUT app.z")
	want := []string{"3:PUT app.x = a", "5:REMOVE app.x", "6:PUT app.y = b", "7:CLEAR", "10:PUT app.mine = m (local)", "11:PUT app.z = c"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the watch heard\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v, _ := watched.Get("app.z"); v != "c" {
		t.Fatalf("the watch did not keep the local copy current: app.z = %q", v)
	}

	// Once stop returns, nothing more is heard, even when the copy moves on.
	stop()
	put(t, writer, "app.after", "x")
	if err := watched.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := watched.Get("app.after"); v != "x" {
		t.Fatal("the refresh did not take the change in")
	}
	heard.mu.Lock()
	defer heard.mu.Unlock()
	if len(heard.lines) != len(want) {
		t.Fatalf("heard after stop: %q", heard.lines[len(want):])
	}
}

// A watcher behind a compaction sees the snapshot as the changes it implies
// under the prefix; a snapshot that changes nothing there is not reported.
func TestWatchThroughASnapshot(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	watched, writer := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	put(t, writer, "app.gone", "1")
	put(t, watched, "app.kept", "k") // the watcher's copy: app.gone, app.kept
	put(t, writer, "app.new", "2")
	put(t, writer, "other", "3")
	if _, err := writer.Remove(ctx, "app.gone"); err != nil {
		t.Fatal(err)
	}
	if err := writer.Compact(ctx); err != nil { // 7: the history before is dropped
		t.Fatal(err)
	}
	heard := newWatchLog()
	stop, err := watched.Watch("app.", heard.take, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	heard.waitFor(t, "PUT app.new")
	put(t, writer, "other", "4")
	if err := writer.Compact(ctx); err != nil { // nothing new under app.
		t.Fatal(err)
	}
	put(t, writer, "app.last", "5")
	got := heard.waitFor(t, "PUT app.last")
	want := []string{"7:REMOVE app.gone; PUT app.new = 2 (snapshot, 2 under the prefix)", "10:PUT app.last = 5"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the watch heard\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Several watches run at once, each with its own prefix, and stop alone.
func TestSeveralWatches(t *testing.T) {
	e := newEnv(t)
	watched, writer := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	before := goleak.IgnoreCurrent()
	a, b, all := newWatchLog(), newWatchLog(), newWatchLog()
	var stops []func()
	for _, w := range []struct {
		prefix string
		log    *watchLog
	}{{"a.", a}, {"b.", b}, {"", all}} {
		stop, err := watched.Watch(w.prefix, w.log.take, func(err error) { t.Error(err) })
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	put(t, writer, "a.1", "x")
	put(t, writer, "b.1", "y")
	a.waitFor(t, "a.1")
	b.waitFor(t, "b.1")
	got := all.waitFor(t, "b.1")
	if len(got) != 2 || len(a.lines) != 1 || len(b.lines) != 1 {
		t.Fatalf("a heard %q, b %q, all %q", a.lines, b.lines, got)
	}
	// Stopped, the watches leave nothing running behind them.
	for _, stop := range stops {
		stop()
	}
	goleak.VerifyNone(t, before)
}

func TestReplaceIfRevision(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	put(t, c, "k", "v1") // revision 2
	p, _ := c.State().Lookup("k")
	if p.Revision != 2 {
		t.Fatalf("k set at %d, want 2", p.Revision)
	}
	replaced, cur, found, err := replaceIfRevision(ctx, c, "k", "v2", 1)
	if err != nil || replaced || !found || cur != (sharedconfig.Property{Value: "v1", Revision: 2}) {
		t.Fatalf("Replace IfRevision on a wrong revision = %v, %+v, %v, %v", replaced, cur, found, err)
	}
	replaced, cur, found, err = replaceIfRevision(ctx, c, "k", "v2", 2)
	if err != nil || !replaced || !found || cur != (sharedconfig.Property{Value: "v1", Revision: 2}) {
		t.Fatalf("Replace IfRevision on the right revision = %v, %+v, %v, %v", replaced, cur, found, err)
	}
	if p, _ := c.State().Lookup("k"); p != (sharedconfig.Property{Value: "v2", Revision: 3}) {
		t.Fatalf("after the replace k = %+v", p)
	}
	replaced, _, found, err = replaceIfRevision(ctx, c, "nope", "x", 3)
	if err != nil || replaced || found {
		t.Fatalf("Replace IfRevision of an absent key = %v, %v, %v", replaced, found, err)
	}
	if _, ok := c.Get("nope"); ok {
		t.Fatal("Replace IfRevision of an absent key created it")
	}

	// A stale copy decides on the latest state: it neither refuses a
	// revision it has not seen yet nor replaces on one that is out of date.
	stale := e.open(sharedconfig.Options{})
	fresh := e.open(sharedconfig.Options{})
	put(t, fresh, "k", "v3") // revision 4; stale still has k at 3
	replaced, cur, _, err = replaceIfRevision(ctx, stale, "k", "mine", 3)
	if err != nil || replaced || cur.Revision != 4 {
		t.Fatalf("stale Replace IfRevision on an old revision = %v, %+v, %v", replaced, cur, err)
	}
	put(t, fresh, "k", "v4") // revision 5
	replaced, cur, _, err = replaceIfRevision(ctx, stale, "k", "mine", 5)
	if err != nil || !replaced || cur.Value != "v4" {
		t.Fatalf("stale Replace IfRevision on the latest revision = %v, %+v, %v", replaced, cur, err)
	}
	// Revisions survive compaction: snapshots keep them.
	if err := fresh.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	late := e.open(sharedconfig.Options{})
	if replaced, _, _, err := replaceIfRevision(ctx, late, "k", "after", 6); err != nil || !replaced {
		t.Fatalf("Replace IfRevision after a compaction = %v, %v", replaced, err)
	}
}

// Writers that read a key's revision and replace on it, racing: every
// replace that lands was made on the value before it, so none is lost.
func TestReplaceIfRevisionConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	put(t, e.open(sharedconfig.Options{}), "n", "0")
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for range writers {
		c := e.open(sharedconfig.Options{})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for done := 0; done < each; {
				p, _ := c.State().Lookup("n")
				n, _ := strconv.Atoi(p.Value)
				replaced, _, _, err := replaceIfRevision(ctx, c, "n", strconv.Itoa(n+1), p.Revision)
				if err != nil {
					t.Error(err)
					return
				}
				if replaced {
					done++
				} else if err := c.Refresh(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c := e.open(sharedconfig.Options{})
	if v, _ := c.Get("n"); v != strconv.Itoa(writers*each) {
		t.Fatalf("n = %s, want %d", v, writers*each)
	}
}

// replaceIfRevision is Replace with IfRevision, its result spelled out:
// whether it replaced, the property it decided on, and whether there was one.
func replaceIfRevision(ctx context.Context, c *sharedconfig.Config, key, value string, revision uint64) (bool, sharedconfig.Property, bool, error) {
	r, err := c.Replace(ctx, key, value, sharedconfig.IfRevision(revision))
	return r.Written, r.Previous, r.Existed, err
}

// A watch goes on across its config destroyed and created again: it hears
// the new one's changes, though their revisions start from 1 again, and a
// prefix watch hears what the new one implies against what it last saw.
func TestWatchHearsTheConfigCreatedAgain(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("again")
	c, err := sharedconfig.Open(ctx, log, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put(t, c, "a", "1")
	put(t, c, "b", "2") // the copy is at revision 3
	all, underA := newWatchLog(), newWatchLog()
	for prefix, w := range map[string]*watchLog{"": all, "a": underA} {
		stop, err := c.Watch(prefix, w.take, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	log.Recreate()
	again, err := sharedconfig.Open(ctx, log, sharedconfig.Options{}) // revision 1: a snapshot
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	put(t, again, "a", "new") // revision 2
	_ = c.Refresh(ctx)        // ErrReplaced, unless the watches' follow found it first
	all.waitFor(t, "2:PUT a = new")
	if got := underA.waitFor(t, "2:PUT a = new"); len(got) != 2 || got[0] != "1:REMOVE a (snapshot, 0 under the prefix)" {
		t.Fatalf("the prefix watch heard %q, want the new config's snapshot removing a, then its put", got)
	}
}
