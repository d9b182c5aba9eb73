package repl

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// A compaction that finds the config destroyed says so as a command would:
// its copy is dropped and the next write creates the config again, empty,
// so "nothing is lost; it will be tried again" would be false twice. (A
// script with --compact-entries 1 met it whenever a destroy fell between a
// line's commit and its compaction, and the next line then said "added" of
// a key it had just updated, after no line had said the config was gone.)
func TestCompactionThatFindsTheConfigDestroyedSaysSo(t *testing.T) {
	srv := jstest.Server(t)
	nc, other := jstest.Connect(t, srv), jstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := jetstream.OpenLog(ctx, nc, "test", "cfg", jetstream.LogOptions{Writer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	out := &output{}
	sh := New(Options{Scope: "test", Name: "cfg", Out: out})
	// The destroy lands between the second PUT's commit and the
	// compaction that commit makes due.
	var commits atomic.Int32
	trace := func(a statesync.Attempt) {
		if a.Revision != 0 && commits.Add(1) == 2 {
			if err := jetstream.DeleteConfig(context.Background(), other, "test", "cfg"); err != nil {
				t.Error(err)
			}
		}
		sh.Attempt(a)
	}
	cfg, err := sharedconfig.Open(ctx, log, sharedconfig.Options{Trace: trace, CompactionFailed: sh.CompactionFailed,
		CompactionPolicy: &sharedconfig.CompactionPolicy{MaxEntries: 2}})
	if err != nil {
		t.Fatal(err)
	}
	sh.Attach(cfg)
	t.Cleanup(sh.Close)
	got := run(sh, out, "PUT a, 1", "PUT a, 2")
	if strings.Contains(got, "nothing is lost") || !strings.Contains(got, "!!!! cfg was destroyed (by another process)") {
		t.Fatalf("a compaction that found the config destroyed said:\n%s", got)
	}
}
