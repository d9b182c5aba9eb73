package sharedconfig

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// checkTree fails unless the tree under s is well formed: keys strictly
// increasing, sizes summed, every branch's mins the least key under each
// child, every leaf at the same depth, and it holds exactly want.
func checkTree(t *testing.T, s State, want map[string]Property) {
	t.Helper()
	if s.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), len(want))
	}
	var keys []string
	for k, p := range s.All() {
		if w, ok := want[k]; !ok || w != p {
			t.Fatalf("%q: %+v, want %+v (present %v)", k, p, w, ok)
		}
		if got, ok := s.Lookup(k); !ok || got != p {
			t.Fatalf("Lookup %q: %+v %v, want %+v", k, got, ok, p)
		}
		keys = append(keys, k)
	}
	if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) || len(keys) != len(want) {
		t.Fatalf("keys not strictly increasing or missing: %d of %d", len(keys), len(want))
	}
	if s.root == nil {
		return
	}
	depth := -1
	var check func(n *node, d int)
	check = func(n *node, d int) {
		if n.isLeaf() {
			if depth >= 0 && d != depth {
				t.Fatalf("leaves at depths %d and %d", depth, d)
			}
			depth = d
			if n.size > 1 && len(n.data) > maxLeafBytes {
				t.Fatalf("leaf of %d entries holds %d bytes", n.size, len(n.data))
			}
			if n.size == 0 || n.size > maxLeaf || len(n.revs) != n.size || len(n.offs) != 2*n.size+1 {
				t.Fatalf("leaf of size %d with %d revisions, %d offsets", n.size, len(n.revs), len(n.offs))
			}
			return
		}
		sum := 0
		if len(n.kids) == 0 || len(n.kids) > maxKids || len(n.mins) != len(n.kids) {
			t.Fatalf("branch of %d children and %d mins", len(n.kids), len(n.mins))
		}
		for i, k := range n.kids {
			if n.mins[i] != k.minKey() {
				t.Fatalf("branch min %q, child's least key %q", n.mins[i], k.minKey())
			}
			sum += k.size
			check(k, d+1)
		}
		if sum != n.size {
			t.Fatalf("branch size %d, children hold %d", n.size, sum)
		}
	}
	check(s.root, 0)
}

// Random puts, removes and batches against a plain map, through sizes that
// split and join leaves and branches; every older state stays as it was.
func TestTreeAgainstAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s, want := EmptyState(), map[string]Property{}
	type kept struct {
		s    State
		want map[string]Property
	}
	var older []kept
	rev := uint64(0)
	keyspace := 20_000
	for round := range 60 {
		if round == 40 {
			keyspace = 500 // now mostly removes and rewrites: leaves shrink and join
		}
		var batch []statesync.Pending[State]
		for range 1 + r.IntN(400) {
			rev++
			k := fmt.Sprintf("k%05d", r.IntN(keyspace))
			var u statesync.Update[State] = Put{k, fmt.Sprintf("v%d", rev)}
			if r.IntN(3) == 0 || round >= 40 && r.IntN(4) != 0 {
				u = Remove{k}
			}
			if r.IntN(2) == 0 {
				s = u.Apply(s, rev)
			} else {
				batch = append(batch, statesync.Pending[State]{Update: u, Revision: rev})
				continue
			}
			applyToMap(want, u, rev)
		}
		s = s.ApplyAll(batch)
		for _, p := range batch {
			applyToMap(want, p.Update, p.Revision)
		}
		checkTree(t, s, want)
		older = append(older, kept{s, maps.Clone(want)})
	}
	for _, o := range older {
		checkTree(t, o.s, o.want)
	}
}

func applyToMap(m map[string]Property, u statesync.Update[State], rev uint64) {
	switch u := u.(type) {
	case Put:
		m[u.Key] = Property{u.Value, rev}
	case Remove:
		delete(m, u.Key)
	}
}

// Leaves of large values split by bytes before they split by count.
func TestTreeLeavesOfLargeValues(t *testing.T) {
	defer func(was int) { maxLeafBytes = was }(maxLeafBytes)
	maxLeafBytes = 1000
	s, want := EmptyState(), map[string]Property{}
	var batch []statesync.Pending[State]
	for i := range 300 {
		k, v := fmt.Sprintf("k%03d", i*7%300), strings.Repeat("v", i%150)
		if i%2 == 0 {
			s = Put{k, v}.Apply(s, uint64(i+1))
		} else {
			batch = append(batch, statesync.Pending[State]{Update: Put{k, v}, Revision: uint64(i + 1)})
		}
		want[k] = Property{v, uint64(i + 1)}
	}
	s = s.ApplyAll(batch)
	checkTree(t, s, want)
}

// Keys of every length, also empty and alike but for their last byte,
// keep their order and their values.
func TestTreeKeysOfAnyBytes(t *testing.T) {
	keys := []string{"", "\x00", "a", "a\x00", "a\xff", "ab", "\xff\xff", "b"}
	s, want := EmptyState(), map[string]Property{}
	for i, k := range slices.Backward(keys) {
		s = Put{k, fmt.Sprint(i)}.Apply(s, uint64(i+1))
		want[k] = Property{fmt.Sprint(i), uint64(i + 1)}
	}
	checkTree(t, s, want)
	var got []string
	for k := range s.WithPrefix("a") {
		got = append(got, k)
	}
	if !slices.Equal(got, []string{"a", "a\x00", "ab", "a\xff"}) {
		t.Fatalf("WithPrefix(a) = %q", got)
	}
}

// A snapshot decodes into the same tree as the puts that made it.
func TestTreeFromSnapshot(t *testing.T) {
	s, want := EmptyState(), map[string]Property{}
	for i := range 5000 {
		k := fmt.Sprintf("key%d", i*7919%5000)
		s = Put{k, "v" + k}.Apply(s, uint64(i+1))
		want[k] = Property{"v" + k, uint64(i + 1)}
	}
	data, err := Codec{}.EncodeInitial(Snapshot{s})
	if err != nil {
		t.Fatal(err)
	}
	back, err := Codec{}.DecodeInitial(data)
	if err != nil {
		t.Fatal(err)
	}
	checkTree(t, back.Create(0), want)
}

// GET and Lookup allocate nothing, whatever the size.
func TestGetAllocatesNothing(t *testing.T) {
	s := EmptyState()
	for i := range 10_000 {
		s = Put{fmt.Sprintf("key%05d", i), "value"}.Apply(s, uint64(i+1))
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := s.Get("key05000"); !ok {
			t.Fatal("key05000 missing")
		}
		if _, ok := s.Lookup("nokey"); ok {
			t.Fatal("nokey found")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per GET", n)
	}
}
