package sharedconfig_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Each writer watches the config while writers in loops hand their PUTs to
// one another (combining): every PUT acknowledged is heard once by every
// watch, marked Local by the watch of the process that made it and by no
// other, whichever process's entry carried it. (A writer's entry carrying
// others' PUTs was Local as a whole, and its shell's follow mode showed none
// of them; another's entry carrying this writer's PUT was not, and the shell
// showed its own PUT as another's change.) Each is heard as made by the
// writer that made it, the entry's or the one that handed it.
func TestWatchTellsCarriedPutsFromOwn(t *testing.T) {
	srv := jstest.Server(t)
	const writers = 4
	var carried atomic.Int64
	configs := make([]*sharedconfig.Config, writers)
	heard := make([][]sharedconfig.Op, writers)
	var mu sync.Mutex
	for i := range configs {
		configs[i] = openNamed(t, srv, "watchcombined", fmt.Sprint("w", i), sharedconfig.Options{Combining: true, Trace: func(a statesync.Attempt) {
			if a.Carried {
				carried.Add(1)
			}
		}})
		stop, err := configs[i].Watch("", func(ch sharedconfig.Change) {
			mu.Lock()
			defer mu.Unlock()
			for _, op := range ch.Ops {
				// Who made it: the entry's writer, or the one that
				// handed it, also in this process's own entries.
				if by := cmp.Or(op.HandedBy, ch.Writer); op.Kind == "put" && !strings.HasPrefix(op.Value, strings.TrimPrefix(by, "w")+":") {
					t.Errorf("w%d's watch heard PUT %s in an entry at %d as made by %q (writer %q)", i, op.Value, ch.Revision, by, ch.Writer)
				}
			}
			heard[i] = append(heard[i], ch.Ops...)
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	told := loopPuts(configs, &carried)
	if carried.Load() == 0 {
		t.Skip("no PUT was carried: the writers never met")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range configs {
		if err := c.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for w := range writers {
		checkHeard(t, w, heard[w], told)
	}
	t.Logf("%d PUTs carried", carried.Load())
}

// checkHeard checks what writer w's watch heard of the PUTs loopPuts made,
// told what: each acknowledged one once, marked Local only if w made it.
// One whose outcome its writer did not learn may be either: carried by
// another writer after its writer gave up on it, it is news to that
// writer too.
func checkHeard(t *testing.T, w int, heard []sharedconfig.Op, told map[string]putOutcome) {
	t.Helper()
	seen := map[string]int{}
	for _, op := range heard {
		if op.Kind != "put" {
			continue
		}
		seen[op.Value]++
		if mine := strings.HasPrefix(op.Value, fmt.Sprint(w, ":")); told[op.Value] == putLanded && op.Local != mine {
			t.Errorf("w%d's watch heard PUT %s with Local %v", w, op.Value, op.Local)
		}
	}
	for v, outcome := range told {
		if outcome == putLanded && seen[v] != 1 {
			t.Errorf("w%d's watch heard PUT %s %d times", w, v, seen[v])
		}
	}
}
