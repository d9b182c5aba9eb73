package sharedconfig

import (
	"iter"
	"strings"

	"github.com/benbjohnson/immutable"
)

// Property is a value and the revision at which it was last set.
type Property struct {
	Value    string
	Revision uint64
	// Lease names the lease the key is attached to, if any: the key goes
	// when the lease expires or is revoked. A plain Put detaches it.
	Lease string
}

// State is the content of a shared config at one revision: string keys to
// properties, sorted by key. It is immutable: updates make a new State that
// shares all but O(log n) of its structure with the old one, so applying an
// update costs the same with 10 keys or 100,000, and a reader keeps a
// consistent snapshot for as long as it holds one. The zero State is empty.
type State struct {
	root   *node      // the properties; nil when there are none (see tree.go)
	leases leaseTable // nil until the first lease (lease.go)
	// revision is the log's revision this state is at, as Pravega's
	// Revisioned state carries its own (set by Config.State).
	revision uint64
}

// Revision is the revision of the log this state is at: the last entry it
// takes in. It is 0 for a state that comes from no log (Set, a snapshot
// inside a Change).
func (s State) Revision() uint64 { return s.revision }

var stringComparer = immutable.NewComparer("")

// Set is s with key set to value at revision: for tools that build a
// state without a log (the bench).
func (s State) Set(key, value string, revision uint64) State {
	return putUpdate{Key: key, Value: value}.Apply(s, revision)
}

// Lookup returns the value of key and the revision that set it.
func (s State) Lookup(key string) (Property, bool) { return s.root.get(key) }

// Len is the number of properties.
func (s State) Len() int {
	if s.root == nil {
		return 0
	}
	return s.root.size
}

// All yields the properties in key order.
func (s State) All() iter.Seq2[string, Property] { return s.WithPrefix("") }

// WithPrefix yields, in key order, the properties whose key starts with prefix.
func (s State) WithPrefix(prefix string) iter.Seq2[string, Property] {
	return func(yield func(string, Property) bool) {
		if s.root == nil {
			return
		}
		s.root.walk(prefix, func(k string, p Property) bool {
			return strings.HasPrefix(k, prefix) && yield(k, p)
		})
	}
}

// with is s with the changes, sorted by key with each key once, made to
// its properties.
func (s State) with(changes ...change) State {
	s.root = s.root.apply(changes)
	return s
}

// set is the change that sets key to p.
func set(key string, p Property) change { return change{entry: entry{key, p}} }

// del is the change that deletes key.
func del(key string) change { return change{entry: entry{key: key}, del: true} }
