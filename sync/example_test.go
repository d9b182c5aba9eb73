package statesync_test

import (
	"context"
	"fmt"
	"slices"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// Two processes share a counter. Each increment is a conditional append;
// the stale one catches up and adds to the latest value, so none is lost.
func Example_counter() {
	ctx := context.Background()
	log := memlog.New("counter") // in real use: a jetstream.Log
	alice := statesync.New[example.Counter](log, example.CounterCodec{})
	bob := statesync.New[example.Counter](log, example.CounterCodec{})
	for _, s := range []*statesync.Synchronizer[example.Counter]{alice, bob} {
		if err := s.Initialize(ctx, example.CounterStart{}); err != nil {
			panic(err)
		}
	}

	example.Increment(ctx, alice)
	example.Increment(ctx, alice)
	saw, _ := example.Increment(ctx, bob) // bob's copy said 0: it catches up first

	st, rev := bob.State()
	fmt.Println("bob added to", saw, "and now sees", st, "at revision", rev)
	// Output: bob added to 2 and now sees 3 at revision 4
}

// A shared set, with a conditional add: "add if there is room", decided
// against the latest state, as UpdateState guarantees.
func Example_set() {
	ctx := context.Background()
	log := memlog.New("set")
	open := func() *statesync.Synchronizer[example.Set] {
		s := statesync.New[example.Set](log, example.SetCodec{})
		if err := s.Initialize(ctx, example.SetOf{}); err != nil {
			panic(err)
		}
		return s
	}
	addIfRoom := func(s *statesync.Synchronizer[example.Set], member string) bool {
		added, _, err := statesync.UpdateState(ctx, s, func(set example.Set) ([]statesync.Update[example.Set], bool) {
			if set.Len() >= 2 || set.Has(member) {
				return nil, false
			}
			return []statesync.Update[example.Set]{example.SetAdd{Member: member}}, true
		})
		if err != nil {
			panic(err)
		}
		return added
	}
	a, b := open(), open()
	fmt.Println(addIfRoom(a, "x"), addIfRoom(a, "y"))
	fmt.Println(addIfRoom(b, "z")) // b's copy is empty, but the set is full
	st, _ := b.State()
	fmt.Println(slices.Collect(st.Members()))
	// Output:
	// true true
	// false
	// [x y]
}
