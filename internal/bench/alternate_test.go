package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// The two sides of a contended figure run in the order a b b a a b b a,
// so that each goes first in half the pairs of slices: with strict
// alternation, load that recurs once per pair fell on the second side only.
func TestAlternateGoesFirstInHalfThePairs(t *testing.T) {
	r := &runner{o: Options{Duration: turnsEach * 100 * time.Millisecond}}
	var mu sync.Mutex
	var order []string
	side := func(name string) func(int) (int, error) {
		return func(int) (int, error) {
			mu.Lock()
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			return 1, nil
		}
	}
	a, b, err := r.alternate(context.Background(), 1, side("a"), side("b"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b", "b", "a", "a", "b", "b", "a"}
	// Two slices of one side in a row show as one run of that side.
	compacted := slices.Compact(slices.Clone(want))
	if !slices.Equal(order, compacted) {
		t.Errorf("sides ran in the order %v, want %v (slices %v)", order, compacted, want)
	}
	if a.commits == 0 || b.commits == 0 {
		t.Errorf("commits a %d, b %d: want both counted", a.commits, b.commits)
	}
}
