package sharedconfig_test

import (
	"sync"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Writers in a closed loop of back-to-back writes on one real server take
// turns: no commit takes more than a few tries, where without turns one
// writer can lose hundreds of times in a row (it is always a round trip
// behind the writer that just won). The bound leaves room for a loaded
// machine: a writer announces after its second loss, and may lose once
// more to a write already under way, and a few times if a wait runs out or
// words arrive late. Measured on 2 cores: with turns 3 to 5 in eighteen
// runs (six under -race). Before writers said hello when they start to
// listen, a writer that missed the word of a turn's holder lost every try
// of that turn: 10 to 16 in one run of five with turns of 16 commits, 21
// once under -race on a loaded machine, 31 with turns of 32. Without turns
// (the log hiding its Announcer) 74 to 143, and 91 to 161 under -race.
func TestWritersTakeTurns(t *testing.T) {
	srv := jstest.Server(t)
	const writers, each, bound = 4, 100, 30
	var mu sync.Mutex
	worst, commits := 0, make([]int, writers)
	var wg sync.WaitGroup
	for i := range writers {
		s := openCounter(t, srv, "turns", statesync.WithTrace(func(a statesync.Attempt) {
			if a.Revision != 0 {
				mu.Lock()
				worst = max(worst, a.N)
				commits[i]++
				mu.Unlock()
			}
		}))
		incrementEach(t, &wg, s, each)
	}
	wg.Wait()
	t.Logf("most tries for one commit: %d; commits per writer %v", worst, commits)
	if worst > bound {
		t.Fatalf("one commit took %d tries (bound %d)", worst, bound)
	}
}
