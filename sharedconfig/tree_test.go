package sharedconfig

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

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
			if n.leases != nil && (len(n.leases) != n.size || !slices.ContainsFunc(n.leases, func(l string) bool { return l != "" })) {
				t.Fatalf("leaf of size %d keeps %d lease names, %q", n.size, len(n.leases), n.leases)
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

// model is what a State should hold, in plain maps.
type model struct {
	props  map[string]Property
	leases map[string]bool
}

func (m model) clone() model { return model{maps.Clone(m.props), maps.Clone(m.leases)} }

// apply makes u's change to the model as the package documents it.
func (m model) apply(u statesync.Update[State], rev uint64) {
	switch u := u.(type) {
	case putUpdate:
		m.props[u.Key] = Property{Value: u.Value, Revision: rev}
	case removeUpdate:
		delete(m.props, u.Key)
	case clearUpdate:
		clear(m.props)
	case registerLease:
		m.leases[u.Lease] = true
	case putWithLease:
		if m.leases[u.Lease] {
			m.props[u.Key] = Property{Value: u.Value, Revision: rev, Lease: u.Lease}
		}
	case revokeLease:
		if m.leases[u.Lease] {
			maps.DeleteFunc(m.props, func(_ string, p Property) bool { return p.Lease == u.Lease })
			delete(m.leases, u.Lease)
		}
	default:
		panic(fmt.Sprintf("model: %T", u))
	}
}

// randomUpdate is a PUT, REMOVE, PUT with a lease, or rarely a lease's
// registration or revocation, or very rarely a CLEAR, of one of keyspace
// keys.
func randomUpdate(r *rand.Rand, keyspace int, rev uint64, removes bool) statesync.Update[State] {
	k := fmt.Sprintf("k%05d", r.IntN(keyspace))
	lease := fmt.Sprintf("lease%d", r.IntN(3))
	switch x := r.IntN(1000); {
	case x < 1:
		return clearUpdate{}
	case x < 20:
		return registerLease{Lease: lease, Holder: "h", TTL: time.Hour}
	case x < 30:
		return revokeLease{Lease: lease, Holder: "h"}
	case x < 250:
		return putWithLease{Key: k, Value: fmt.Sprintf("v%d", rev), Lease: lease}
	case x < 450 || removes && x < 800:
		return removeUpdate{k}
	}
	return putUpdate{k, fmt.Sprintf("v%d", rev)}
}

// Random puts, removes, puts with leases, revocations and batches against
// plain maps, through sizes that split and join leaves and branches; every
// older state stays as it was.
func TestTreeAgainstAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s, want := State{}, model{map[string]Property{}, map[string]bool{}}
	type kept struct {
		s    State
		want model
	}
	var older []kept
	rev := uint64(0)
	keyspace := 20_000
	for round := range 60 {
		if round == 40 {
			keyspace = 500 // now mostly removes and rewrites: leaves shrink and join
		}
		var batch []pending
		for range 1 + r.IntN(400) {
			rev++
			u := randomUpdate(r, keyspace, rev, round >= 40)
			if r.IntN(2) == 0 {
				s = u.Apply(s, rev)
				want.apply(u, rev)
			} else {
				batch = append(batch, pending{Update: u, Revision: rev})
			}
		}
		if r.IntN(2) == 0 { // a batch of PUTs and REMOVEs only takes applyAll's own way
			batch = slices.DeleteFunc(batch, func(p pending) bool {
				_, put := p.Update.(putUpdate)
				_, remove := p.Update.(removeUpdate)
				return !put && !remove
			})
		}
		s = applyBatch(s, batch)
		for _, p := range batch {
			want.apply(p.Update, p.Revision)
		}
		checkState(t, s, want)
		older = append(older, kept{s, want.clone()})
	}
	for _, o := range older {
		checkState(t, o.s, o.want)
	}
}

// checkState fails unless s holds what the model does.
func checkState(t *testing.T, s State, want model) {
	t.Helper()
	checkTree(t, s, want.props)
	for name := range want.leases {
		if _, ok := s.Lease(name); !ok {
			t.Fatalf("lease %s missing", name)
		}
	}
	for name := range s.Leases() {
		if !want.leases[name] {
			t.Fatalf("lease %s, which the model has not", name)
		}
	}
}

// FuzzTreeAgainstAMap: any sequence of updates, applied one by one or as
// batches, leaves the state the model holds.
func FuzzTreeAgainstAMap(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03"), uint64(1))
	f.Add([]byte(strings.Repeat("\x05\x10\x3f\x80\xff", 60)), uint64(7))
	f.Fuzz(checkUpdatesAgainstAMap)
}

// checkUpdatesAgainstAMap applies an update for each byte of ops, drawn
// from seed and the byte, one by one or (a byte divisible by 3) batched
// with the next, to a State and to the model, and compares them.
func checkUpdatesAgainstAMap(t *testing.T, ops []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, uint64(len(ops))))
	s, want := State{}, model{map[string]Property{}, map[string]bool{}}
	var batch []pending
	for i, b := range ops {
		rev := uint64(i + 1)
		u := randomUpdate(r, 100+int(b), rev, b%2 == 0)
		if b%3 == 0 {
			batch = append(batch, pending{Update: u, Revision: rev})
			continue
		}
		s = applyBatch(s, batch)
		for _, p := range batch {
			want.apply(p.Update, p.Revision)
		}
		batch = batch[:0]
		s = u.Apply(s, rev)
		want.apply(u, rev)
	}
	s = applyBatch(s, batch)
	for _, p := range batch {
		want.apply(p.Update, p.Revision)
	}
	checkState(t, s, want)
}

// A PUT copies the leaf it changes and the branches above it, and shares
// every other node with the state before; that state stays as it was.
func TestTreeUpdateSharesAllButOnePath(t *testing.T) {
	t.Parallel()
	var es []entry
	want := map[string]Property{}
	for i := range 100_000 {
		k := fmt.Sprintf("key%06d", i)
		es = append(es, entry{k, Property{Value: "v", Revision: uint64(i + 1)}})
		want[k] = es[i].Property
	}
	s := State{root: build(es)}
	before := map[*node]bool{}
	depth := 0
	var visit func(n *node, d int)
	visit = func(n *node, d int) {
		before[n], depth = true, max(depth, d+1)
		for _, k := range n.kids {
			visit(k, d+1)
		}
	}
	visit(s.root, 0)
	after := s.with(set("key050000", Property{Value: "new", Revision: 200_000, Lease: "l"}))
	fresh := 0
	var count func(n *node)
	count = func(n *node) {
		if before[n] {
			return
		}
		fresh++
		for _, k := range n.kids {
			count(k)
		}
	}
	count(after.root)
	if fresh != depth || depth < 3 {
		t.Fatalf("a PUT made %d new nodes in a tree %d deep; want one per level", fresh, depth)
	}
	if p, _ := after.Lookup("key050000"); p.Value != "new" || p.Lease != "l" {
		t.Fatalf("after the PUT: %+v", p)
	}
	checkTree(t, s, want)
}

// Leaves of large values split by bytes before they split by count.
func TestTreeLeavesOfLargeValues(t *testing.T) {
	defer func(was int) { maxLeafBytes = was }(maxLeafBytes)
	maxLeafBytes = 1000
	s, want := State{}, map[string]Property{}
	var batch []pending
	for i := range 300 {
		k, v := fmt.Sprintf("k%03d", i*7%300), strings.Repeat("v", i%150)
		if i%2 == 0 {
			s = putUpdate{k, v}.Apply(s, uint64(i+1))
		} else {
			batch = append(batch, pending{Update: putUpdate{k, v}, Revision: uint64(i + 1)})
		}
		want[k] = Property{Value: v, Revision: uint64(i + 1)}
	}
	s = applyBatch(s, batch)
	checkTree(t, s, want)
}

// Keys of every length, also empty and alike but for their last byte,
// keep their order and their values.
func TestTreeKeysOfAnyBytes(t *testing.T) {
	keys := []string{"", "\x00", "a", "a\x00", "a\xff", "ab", "\xff\xff", "b"}
	s, want := State{}, map[string]Property{}
	for i, k := range slices.Backward(keys) {
		s = putUpdate{k, fmt.Sprint(i)}.Apply(s, uint64(i+1))
		want[k] = Property{Value: fmt.Sprint(i), Revision: uint64(i + 1)}
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

// A snapshot decodes into the same tree as the puts that made it, leases
// too.
func TestTreeFromSnapshot(t *testing.T) {
	s, want := State{}, model{map[string]Property{}, map[string]bool{}}
	for _, name := range []string{"a", "b"} {
		u := registerLease{Lease: name, Holder: "h", TTL: time.Hour}
		s = u.Apply(s, 1)
		want.apply(u, 1)
	}
	for i := range 5000 {
		k := fmt.Sprintf("key%d", i*7919%5000)
		var u statesync.Update[State] = putUpdate{k, "v" + k}
		if i%3 == 0 {
			u = putWithLease{k, "v" + k, []string{"a", "b"}[i%2]}
		}
		s = u.Apply(s, uint64(i+2))
		want.apply(u, uint64(i+2))
	}
	data, err := codec{}.EncodeInitial(snapshotUpdate{s})
	if err != nil {
		t.Fatal(err)
	}
	back, err := codec{}.DecodeInitial(data)
	if err != nil {
		t.Fatal(err)
	}
	checkState(t, back.Create(0), want)
}

// GET and Lookup allocate nothing, whatever the size.
func TestGetAllocatesNothing(t *testing.T) {
	s := State{}
	for i := range 10_000 {
		s = putUpdate{fmt.Sprintf("key%05d", i), "value"}.Apply(s, uint64(i+1))
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := s.Lookup("key05000"); !ok {
			t.Fatal("key05000 missing")
		}
		if _, ok := s.Lookup("nokey"); ok {
			t.Fatal("nokey found")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per GET", n)
	}
}

// pending is an update and the revision of its entry, for applyAll.
type pending struct {
	Update   statesync.Update[State]
	Revision uint64
}

// applyAll is s.ApplyAll of batch.
func applyBatch(s State, batch []pending) State {
	updates, revisions := make([]statesync.Update[State], len(batch)), make([]uint64, len(batch))
	for i, p := range batch {
		updates[i], revisions[i] = p.Update, p.Revision
	}
	return s.applyAll(updates, revisions)
}
