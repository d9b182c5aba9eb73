package sharedconfig_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

func describeChanges(chs []sharedconfig.Change) string {
	var parts []string
	for _, ch := range chs {
		if ch.Snapshot {
			parts = append(parts, fmt.Sprintf("%d:snapshot(%d)", ch.Revision, ch.Properties))
			continue
		}
		var ops []string
		for _, op := range ch.Ops {
			ops = append(ops, op.String())
		}
		parts = append(parts, fmt.Sprintf("%d:%s", ch.Revision, strings.Join(ops, ";")))
	}
	return strings.Join(parts, " ")
}

func TestHistory(t *testing.T) {
	ctx := context.Background()
	c := newEnv(t).open(sharedconfig.Options{})
	put(t, c, "a", "1")
	put(t, c, "b", "2")
	if _, err := c.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	chs, err := c.History(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := describeChanges(chs); got != "1:snapshot(0) 2:PUT a = 1 3:PUT b = 2 4:REMOVE a" {
		t.Fatalf("History(Last: 10) = %s", got)
	}
	if chs[1].Time.IsZero() {
		t.Error("entries read from the stream carry no time")
	}
	chs, _ = c.History(ctx, "", 2)
	if got := describeChanges(chs); got != "3:PUT b = 2 4:REMOVE a" {
		t.Fatalf("History(Last: 2) = %s", got)
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, c, "b", "3")
	chs, _ = c.History(ctx, "", 10)
	if got := describeChanges(chs); got != "5:snapshot(1) 6:PUT b = 3" {
		t.Fatalf("History after compaction = %s", got)
	}
}

func TestKeyHistory(t *testing.T) {
	ctx := context.Background()
	c := newEnv(t).open(sharedconfig.Options{})
	put(t, c, "k", "1")
	put(t, c, "other", "x")
	put(t, c, "k", "2")
	if _, err := c.Remove(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	put(t, c, "k", "3")
	// describe spells out a key's History, and the revision from which it
	// is complete: the snapshot it starts from.
	describe := func(chs []sharedconfig.Change) (string, uint64) {
		if len(chs) == 0 || !chs[0].Snapshot {
			t.Fatalf("a key's History does not start from a snapshot: %+v", chs)
		}
		var parts []string
		for _, ch := range chs {
			if len(ch.Ops) != 1 && !(ch.Snapshot && len(ch.Ops) == 0) {
				t.Fatalf("revision %d: %d ops for one key: %+v", ch.Revision, len(ch.Ops), ch.Ops)
			}
			switch {
			case len(ch.Ops) == 0: // the snapshot, without the key
			case ch.Ops[0].Kind == "remove":
				parts = append(parts, fmt.Sprintf("%d:removed", ch.Revision))
			case ch.Snapshot:
				parts = append(parts, fmt.Sprintf("%d:snapshot=%s", ch.Revision, ch.Ops[0].Value))
			default:
				parts = append(parts, fmt.Sprintf("%d:%s", ch.Revision, ch.Ops[0].Value))
			}
		}
		return strings.Join(parts, " "), chs[0].Revision
	}
	chs, err := c.History(ctx, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, start := describe(chs); got != "2:1 4:2 5:removed 6:3" || start != 1 {
		t.Fatalf("History(Key: k) = %s from %d", got, start)
	}
	chs, _ = c.History(ctx, "k", 2)
	if len(chs) != 2 || chs[0].Revision != 5 || chs[1].Revision != 6 {
		t.Fatalf("History(Key: k, Last: 2) = %+v, want the changes at 5 and 6", chs)
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, c, "k", "4")
	chs, _ = c.History(ctx, "k", 0)
	if got, start := describe(chs); got != "7:snapshot=3 8:4" || start != 7 {
		t.Fatalf("History(Key: k) after compaction = %s from %d", got, start)
	}
	if p, _ := c.State().Lookup("k"); p.Revision != 8 {
		t.Fatalf("k last changed at %d, want 8", p.Revision)
	}
	// A new reader gets the revisions from the snapshot.
	if p, _ := newEnvAt(t, c).State().Lookup("other"); p.Revision != 3 {
		t.Fatalf("other last changed at %d after a snapshot, want 3", p.Revision)
	}
}

// newEnvAt opens another client of c's config.
func newEnvAt(t *testing.T, c *sharedconfig.Config) *sharedconfig.Config {
	t.Helper()
	l := c.Log().(*jetstream.Log)
	nc := l.Conn()
	name := strings.TrimPrefix(l.Name(), "SC_4_test_")
	return openOn(t, nc, name, sharedconfig.Options{})
}

func TestStatus(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, b := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	put(t, a, "key", "value")
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := sharedconfig.Status{Revision: 1, LastRevision: 2}
	if st != want {
		t.Fatalf("Status = %+v, want %+v", st, want)
	}
	st, _ = a.Status(ctx)
	if st.Properties != 1 || st.Bytes != 8 || st.EntriesSinceCompaction != 1 || st.Revision != 2 {
		t.Fatalf("Status = %+v", st)
	}
}

func TestFollowSeesOthersChanges(t *testing.T) {
	srv := jstest.Server(t)
	var mu sync.Mutex
	var seen []sharedconfig.Change
	follower := openOn(t, jstest.Connect(t, srv), "follow", sharedconfig.Options{})
	stop, err := follower.Watch("", func(ch sharedconfig.Change) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ch)
	}, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	nc := jstest.Connect(t, srv)
	l, err := jetstream.OpenLog(context.Background(), nc, "test", "follow", jetstream.LogOptions{Writer: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	writer, err := sharedconfig.Open(context.Background(), l, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, writer, "k", "v")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _ := follower.Get("k"); v == "v" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower did not see the change without a refresh")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	last := seen[len(seen)-1]
	if last.Writer != "bob" || last.Local || len(last.Ops) != 1 || last.Ops[0] != (sharedconfig.Op{Kind: "put", Key: "k", Value: "v"}) {
		t.Fatalf("the follower heard %+v", last)
	}
}
