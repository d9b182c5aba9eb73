package sharedconfig

import (
	"slices"
	"strings"
)

// The state's map is a persistent B+tree whose leaves are packed: a leaf
// holds its keys and values back to back in one string, their offsets, and
// their revisions. A property costs its bytes, 8 bytes of offsets and 8 of
// revision, and a share of its leaf's few headers, where a tree of
// key/value structs pays two string headers and a separately allocated key
// and value each (docs/performance.md compares the two). Lease names are
// kept only by leaves that hold a key with a lease, and keys of one lease in
// a leaf share one copy of its name. A change copies the leaf and the
// branches above it, never the rest, so applying it costs O(log n) with
// 100,000 keys as with 10, and a reader keeps the tree it holds.

// Leaves and branches split above these sizes. A leaf is copied on every
// change to it, so its size trades the copy a PUT makes against the
// headers each property shares.
const (
	maxLeaf = 64
	maxKids = 64
	// A leaf a deletion leaves below minLeaf is joined with a neighbour.
	minLeaf = maxLeaf / 4
)

// A leaf of large values holds fewer than maxLeaf, so that its offsets, of
// 32 bits, never wrap. (A variable for the test of it.)
var maxLeafBytes = 1 << 30

// node is a leaf (kids == nil) or a branch of the tree. Nodes are never
// changed once made: every change makes new ones.
type node struct {
	// A leaf: entry i's key is data[offs[2i]:offs[2i+1]] and its value
	// data[offs[2i+1]:offs[2i+2]].
	data string
	offs []uint32
	revs []uint64
	// leases[i] is entry i's lease; nil when no entry has one.
	leases []string
	// A branch: its children, and the least key under each (mins[0] is
	// only a hint: the first child also takes every smaller key).
	mins []string
	kids []*node
	// size is the number of entries under the node.
	size int
}

// entry is a property with its key.
type entry struct {
	key string
	Property
}

// change sets a key to a property, or deletes it.
type change struct {
	entry
	del bool
}

func (n *node) isLeaf() bool { return n.kids == nil }

func (n *node) key(i int) string { return n.data[n.offs[2*i]:n.offs[2*i+1]] }

func (n *node) entry(i int) entry {
	return entry{n.key(i), Property{Value: n.data[n.offs[2*i+1]:n.offs[2*i+2]], Revision: n.revs[i], Lease: n.lease(i)}}
}

func (n *node) lease(i int) string {
	if n.leases == nil {
		return ""
	}
	return n.leases[i]
}

// search is the index of key in the leaf, or where it would go.
func (n *node) search(key string) (int, bool) {
	lo, hi := 0, n.size
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.key(m) < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < n.size && n.key(lo) == key
}

// child is the index of the branch's child that holds key, if any does.
func (n *node) child(key string) int {
	lo, hi := 1, len(n.mins)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.mins[m] <= key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

func (n *node) get(key string) (Property, bool) {
	if n == nil {
		return Property{}, false
	}
	for !n.isLeaf() {
		n = n.kids[n.child(key)]
	}
	i, ok := n.search(key)
	if !ok {
		return Property{}, false
	}
	return n.entry(i).Property, true
}

// walk yields the entries from the first key at or after from, in order,
// until yield returns false; so does walk.
func (n *node) walk(from string, yield func(string, Property) bool) bool {
	if n.isLeaf() {
		i, _ := n.search(from)
		for ; i < n.size; i++ {
			e := n.entry(i)
			if !yield(e.key, e.Property) {
				return false
			}
		}
		return true
	}
	for i := n.child(from); i < len(n.kids); i++ {
		if !n.kids[i].walk(from, yield) {
			return false
		}
	}
	return true
}

// minKey is the least key under the node, a copy: a branch keeps it while
// the leaf it came from is replaced.
func (n *node) minKey() string { return strings.Clone(n.firstKey()) }

func (n *node) firstKey() string {
	for !n.isLeaf() {
		n = n.kids[0]
	}
	return n.key(0)
}

// apply makes the changes, sorted by key with each key once, to the tree
// under n (which may be nil) and returns its new root, or nil if it is
// empty. Only the leaves the changes touch and the branches above them are
// copied; the rest is shared with n.
func (n *node) apply(changes []change) *node {
	if len(changes) == 0 {
		return n
	}
	var nodes []*node
	if n == nil {
		nodes = packLeaves(merge(nil, changes))
	} else {
		nodes = n.applyUnder(changes)
	}
	return rootOf(nodes)
}

// rootOf is the root of a tree whose nodes, in order, are these.
func rootOf(nodes []*node) *node {
	for len(nodes) > 1 {
		mins := make([]string, len(nodes))
		for i, k := range nodes {
			mins[i] = k.minKey()
		}
		nodes = packBranches(nodes, mins)
	}
	if len(nodes) == 0 {
		return nil
	}
	root := nodes[0]
	for len(root.kids) == 1 {
		root = root.kids[0]
	}
	return root
}

// build is the tree of entries sorted by key, each key once.
func build(es []entry) *node { return rootOf(packLeaves(es)) }

// applyUnder makes the changes under n and returns the nodes that replace
// it: none if it is left empty, more than one if it split.
func (n *node) applyUnder(changes []change) []*node {
	if len(changes) == 1 { // a PUT: copy one path, and nothing twice
		if one := n.applyOne(changes[0]); one != nil {
			return []*node{one}
		}
	}
	if n.isLeaf() {
		return packLeaves(merge(n.entries(), changes))
	}
	kids := make([]*node, 0, len(n.kids)+1)
	mins := make([]string, 0, len(n.kids)+1)
	next := 0 // the first child not yet in kids
	for j := 0; j < len(changes); {
		i := max(n.child(changes[j].key), next)
		end := len(changes)
		if i+1 < len(n.mins) {
			end = j + searchChanges(changes[j:], n.mins[i+1])
		}
		kids, mins = append(kids, n.kids[next:i]...), append(mins, n.mins[next:i]...)
		for _, k := range n.kids[i].applyUnder(changes[j:end]) {
			kids, mins = append(kids, k), append(mins, k.minKey())
		}
		next, j = i+1, end
	}
	kids, mins = append(kids, n.kids[next:]...), append(mins, n.mins[next:]...)
	kids, mins = joinSmallLeaves(kids, mins)
	return packBranches(kids, mins)
}

// applyOne makes one change under n and returns the node that replaces
// it, or nil if the change splits or empties a node or leaves a leaf to be
// joined: applyUnder's general way does those.
func (n *node) applyOne(c change) *node {
	if n.isLeaf() {
		i, found := n.search(c.key)
		switch {
		case c.del && !found:
			return n
		case c.del && n.size > minLeaf:
			return n.splice(i, 1)
		case c.del:
			return nil
		case len(n.data)+len(c.key)+len(c.Value) > maxLeafBytes:
			return nil
		case found:
			return n.splice(i, 1, c.entry)
		case n.size < maxLeaf:
			return n.splice(i, 0, c.entry)
		}
		return nil
	}
	i := n.child(c.key)
	kid := n.kids[i].applyOne(c)
	if kid == nil {
		return nil
	}
	b := &node{kids: slices.Clone(n.kids), mins: slices.Clone(n.mins), size: n.size - n.kids[i].size + kid.size}
	b.kids[i] = kid
	if least := kid.firstKey(); least != n.mins[i] {
		b.mins[i] = strings.Clone(least)
	}
	return b
}

// splice is a copy of the leaf with its entries [i, i+drop) replaced by es.
func (n *node) splice(i, drop int, es ...entry) *node {
	from, to := n.offs[2*i], n.offs[2*(i+drop)]
	added := 0
	for _, e := range es {
		added += len(e.key) + len(e.Value)
	}
	size := n.size - drop + len(es)
	l := &node{offs: make([]uint32, 0, 2*size+1), revs: make([]uint64, 0, size), size: size}
	var b strings.Builder
	b.Grow(len(n.data) - int(to-from) + added)
	b.WriteString(n.data[:from])
	l.offs = append(l.offs, n.offs[:2*i+1]...)
	l.revs = append(l.revs, n.revs[:i]...)
	for _, e := range es {
		b.WriteString(e.key)
		l.offs = append(l.offs, uint32(b.Len()))
		b.WriteString(e.Value)
		l.offs = append(l.offs, uint32(b.Len()))
		l.revs = append(l.revs, e.Revision)
	}
	shift := uint32(b.Len()) - to // what follows moves by this, modulo 2³²
	b.WriteString(n.data[to:])
	for _, o := range n.offs[2*(i+drop)+1:] {
		l.offs = append(l.offs, o+shift)
	}
	l.revs = append(l.revs, n.revs[i+drop:]...)
	l.data = b.String()
	l.leases = n.splicedLeases(i, drop, es)
	return l
}

// splicedLeases is the leases of the leaf splice makes: nil if none of its
// entries has one. A name the leaf already holds is shared, not copied.
func (n *node) splicedLeases(i, drop int, es []entry) []string {
	leased := 0
	for j, name := range n.leases {
		if name != "" && (j < i || j >= i+drop) {
			leased++
		}
	}
	for _, e := range es {
		if e.Lease != "" {
			leased++
		}
	}
	if leased == 0 {
		return nil
	}
	out := make([]string, n.size-drop+len(es))
	if n.leases != nil {
		copy(out, n.leases[:i])
		copy(out[i+len(es):], n.leases[i+drop:])
	}
	for j, e := range es {
		out[i+j] = e.Lease
		if k := slices.Index(n.leases, e.Lease); e.Lease != "" && k >= 0 {
			out[i+j] = n.leases[k]
		}
	}
	return out
}

// searchChanges is the index of the first change at or after key.
func searchChanges(changes []change, key string) int {
	i, _ := slices.BinarySearchFunc(changes, key, func(c change, k string) int { return strings.Compare(c.key, k) })
	return i
}

func (n *node) entries() []entry {
	es := make([]entry, n.size)
	for i := range es {
		es[i] = n.entry(i)
	}
	return es
}

// merge applies sorted changes to sorted entries.
func merge(es []entry, changes []change) []entry {
	out := make([]entry, 0, len(es)+len(changes))
	i := 0
	for _, c := range changes {
		for i < len(es) && es[i].key < c.key {
			out = append(out, es[i])
			i++
		}
		if i < len(es) && es[i].key == c.key {
			i++
		}
		if !c.del {
			out = append(out, c.entry)
		}
	}
	return append(out, es[i:]...)
}

// joinSmallLeaves joins each leaf smaller than minLeaf, as deletions leave
// them, with a neighbour, so that a tree does not fill with near-empty
// leaves that cost a leaf's headers each.
func joinSmallLeaves(kids []*node, mins []string) ([]*node, []string) {
	for i := 0; i < len(kids) && len(kids) > 1; i++ {
		if !kids[i].isLeaf() || kids[i].size >= minLeaf {
			continue
		}
		j := i
		if j+1 == len(kids) {
			j--
		}
		if !kids[j+1].isLeaf() || !kids[j].isLeaf() {
			continue
		}
		joined := packLeaves(append(kids[j].entries(), kids[j+1].entries()...))
		var joinedMins []string
		for _, k := range joined {
			joinedMins = append(joinedMins, k.minKey())
		}
		kids = slices.Replace(kids, j, j+2, joined...)
		mins = slices.Replace(mins, j, j+2, joinedMins...)
	}
	return kids, mins
}

// packLeaves packs sorted entries into as few leaves as hold them, of even
// sizes.
func packLeaves(es []entry) []*node {
	k := (len(es) + maxLeaf - 1) / maxLeaf
	leaves := make([]*node, 0, k)
	for i := range k {
		leaves = appendLeaves(leaves, es[i*len(es)/k:(i+1)*len(es)/k])
	}
	return leaves
}

// appendLeaves appends es as one leaf, or halves them until each half
// takes at most maxLeafBytes.
func appendLeaves(leaves []*node, es []entry) []*node {
	total := 0
	for _, e := range es {
		total += len(e.key) + len(e.Value)
	}
	if total <= maxLeafBytes || len(es) == 1 {
		return append(leaves, newLeaf(es))
	}
	return appendLeaves(appendLeaves(leaves, es[:len(es)/2]), es[len(es)/2:])
}

func newLeaf(es []entry) *node {
	total := 0
	for _, e := range es {
		total += len(e.key) + len(e.Value)
	}
	var b strings.Builder
	b.Grow(total)
	n := &node{offs: make([]uint32, 0, 2*len(es)+1), revs: make([]uint64, len(es)), size: len(es)}
	n.offs = append(n.offs, 0)
	for i, e := range es {
		b.WriteString(e.key)
		n.offs = append(n.offs, uint32(b.Len()))
		b.WriteString(e.Value)
		n.offs = append(n.offs, uint32(b.Len()))
		n.revs[i] = e.Revision
	}
	n.data = b.String()
	n.leases = leasesOf(es)
	return n
}

// leasesOf is the leases of a new leaf of es: nil if none has one, and
// one copy of each name otherwise.
func leasesOf(es []entry) []string {
	if !slices.ContainsFunc(es, func(e entry) bool { return e.Lease != "" }) {
		return nil
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Lease
		if k := slices.Index(out[:i], e.Lease); e.Lease != "" && k >= 0 {
			out[i] = out[k]
		}
	}
	return out
}

// packBranches packs nodes, in order, with the least key under each, into
// as few branches as hold them, of even sizes.
func packBranches(kids []*node, mins []string) []*node {
	k := (len(kids) + maxKids - 1) / maxKids
	branches := make([]*node, k)
	for i := range k {
		from, to := i*len(kids)/k, (i+1)*len(kids)/k
		b := &node{kids: slices.Clone(kids[from:to]), mins: slices.Clone(mins[from:to])}
		for _, kid := range b.kids {
			b.size += kid.size
		}
		branches[i] = b
	}
	return branches
}
