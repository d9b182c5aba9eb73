package sharedconfig_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// putOutcome is what one PUT of the test was told.
type putOutcome int

const (
	putLanded putOutcome = iota
	putUnknown
	putFailed
)

// Writers in closed loops of PUTs hand their calls to the writer under way,
// which carries them in its own entries (combining, docs/consistency.md):
// whoever commits a PUT, every PUT acknowledged is in the log once, none is
// there twice, one that failed is not there, and one whose outcome was
// reported unknown is there at most once. Some PUTs are given so little
// time that they end while handed out.
func TestCombinedPutsLandOnceEach(t *testing.T) {
	srv := jstest.Server(t)
	const writers = 6
	var carried atomic.Int64
	configs := make([]*sharedconfig.Config, writers)
	for i := range configs {
		configs[i] = openNamed(t, srv, "combined", fmt.Sprint("w", i), sharedconfig.Options{Combining: true, Trace: func(a statesync.Attempt) {
			if a.Carried {
				carried.Add(1)
				if a.Updates != 1 || a.Revision == 0 {
					t.Errorf("a carried PUT is traced with %d updates at revision %d, not its 1 update at the carrying entry's", a.Updates, a.Revision)
				}
			}
		}})
	}
	told := loopPuts(configs, &carried)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := valuesHandedBy(t, ctx, configs[0])
	keysHandedBy(t, ctx, configs[0], writers)
	counts := map[putOutcome]int{}
	for value, outcome := range told {
		counts[outcome]++
		switch n := seen[value]; {
		case n > 1:
			t.Errorf("PUT %s is in the log %d times", value, n)
		case outcome == putLanded && n == 0:
			t.Errorf("PUT %s was acknowledged, but is not in the log", value)
		case outcome == putFailed && n == 1:
			t.Errorf("PUT %s failed, but is in the log", value)
		}
	}
	for value := range seen {
		if _, ok := told[value]; !ok {
			t.Errorf("the log holds %q, which no PUT wrote", value)
		}
	}
	t.Logf("%d PUTs: %d acknowledged (%d carried by another writer), %d unknown, %d failed", len(told), counts[putLanded], carried.Load(), counts[putUnknown], counts[putFailed])
	if carried.Load() == 0 {
		t.Error("no PUT was carried by another writer: combining did not happen")
	}
}

// loopPuts has each config PUT its own key ("k" and its index) in a closed
// loop, values "index:n", one PUT in eight with 1 µs to 3 ms to go, for
// 1.5 s, and on (up to 15 s) until some PUT was carried: a loaded machine
// (-race, other packages' tests) can keep writers from meeting for a
// while. It returns what each PUT was told.
func loopPuts(configs []*sharedconfig.Config, carried *atomic.Int64) map[string]putOutcome {
	var mu sync.Mutex
	told := map[string]putOutcome{}
	stop, giveUp := time.Now().Add(1500*time.Millisecond), time.Now().Add(15*time.Second)
	var wg sync.WaitGroup
	for i, c := range configs {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop) || carried.Load() == 0 && time.Now().Before(giveUp); n++ {
				value := fmt.Sprintf("%d:%d", i, n)
				timeout := 5 * time.Second
				if rand.IntN(8) == 0 {
					timeout = time.Duration(1+rand.IntN(3000)) * time.Microsecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				_, err := c.Put(ctx, fmt.Sprint("k", i), value)
				cancel()
				outcome := putLanded
				switch {
				case errors.Is(err, statesync.ErrUnknownOutcome):
					outcome = putUnknown
				case err != nil:
					outcome = putFailed
				}
				mu.Lock()
				told[value] = outcome
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return told
}

// valuesHandedBy counts each value loopPuts wrote in c's log, and checks
// that a PUT in another writer's entry names the writer that handed it.
func valuesHandedBy(t *testing.T, ctx context.Context, c *sharedconfig.Config) map[string]int {
	t.Helper()
	changes, err := c.History(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ch := range changes {
		for _, op := range ch.Ops {
			seen[op.Value]++
			if by := "w" + strings.Split(op.Value, ":")[0]; op.Kind == "put" && by != ch.Writer && op.HandedBy != by {
				t.Errorf("PUT %s, in %s's entry %d, says it was handed by %q", op.Value, ch.Writer, ch.Revision, op.HandedBy)
			}
		}
	}
	return seen
}

// keysHandedBy checks that each key's history names, for a PUT in another
// writer's entry, the writer that handed it.
func keysHandedBy(t *testing.T, ctx context.Context, c *sharedconfig.Config, writers int) {
	t.Helper()
	for i := range writers {
		key, by := fmt.Sprint("k", i), fmt.Sprint("w", i)
		keyChanges, err := c.History(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range keyChanges {
			if op := ch.Ops; len(op) == 1 && op[0].Kind == "put" && ch.Writer != by && op[0].HandedBy != by {
				t.Errorf("%s's change at %d, in %s's entry, says it was handed by %q", key, ch.Revision, ch.Writer, op[0].HandedBy)
			}
		}
	}
}

// openNamed opens the config test/name on a connection of its own, as the
// writer named writer.
func openNamed(t *testing.T, srv *localserver.Server, name, writer string, o sharedconfig.Options) *sharedconfig.Config {
	t.Helper()
	log, err := jetstream.OpenLog(context.Background(), jstest.Connect(t, srv), "test", name, jetstream.LogOptions{Writer: writer})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sharedconfig.Open(context.Background(), log, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The entry-count compaction waits for a second with no entry carrying
// handed calls, whose writers learn what became of them only by reading
// it, and compacts anyway at 4 times its count.
func TestCompactionWaitsForAQuietMomentAfterCarriedCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	a := e.open(sharedconfig.Options{Combining: true, CompactionFailed: func(err error) { t.Log(err) },
		CompactionPolicy: &sharedconfig.CompactionPolicy{MaxEntries: 10}})
	b := e.open(sharedconfig.Options{})
	first := func() uint64 {
		info, err := a.Log().(*jetstream.Log).Stream().Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.FirstSeq
	}
	carrying := func() {
		// An entry that says it carries a call another writer handed.
		carried := statesync.CarriedContext(ctx, []statesync.Carried{{ID: fmt.Sprint("call", time.Now().UnixNano()), Start: 0, End: 1}})
		put(t, b, "handed", "x")
		if _, err := b.Put(carried, "handed", "y"); err != nil {
			t.Fatal(err)
		}
		if err := a.Refresh(ctx); err != nil || a.LastCarried().IsZero() {
			t.Fatalf("a read the carrying entry: %v, last carried %v", err, a.LastCarried())
		}
	}
	carrying()
	start := first()
	for i := range 12 {
		put(t, a, "k", fmt.Sprint(i))
	}
	if time.Since(a.LastCarried()) < time.Second && first() != start {
		t.Fatalf("compacted within a second of an entry that carries a call (history starts at %d, was %d)", first(), start)
	}
	time.Sleep(time.Second)
	put(t, a, "k", "quiet")
	if first() == start {
		t.Fatalf("not compacted after a quiet second, %d entries since the last snapshot", a.EntriesSinceCompaction())
	}
	carrying()
	start = first()
	for i := range 45 {
		put(t, a, "k", fmt.Sprint(i))
	}
	if first() == start {
		t.Fatalf("not compacted at %d entries, over 4 times the policy's 10", a.EntriesSinceCompaction())
	}
}
