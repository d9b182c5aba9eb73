package sharedconfig

import (
	"iter"
	"strings"
)

// Property is a value and the revision at which it was last set.
type Property struct {
	Value    string
	Revision uint64
}

// State is the content of a shared config at one revision: string keys to
// properties, sorted by key. It is immutable: updates make a new State that
// shares all but O(log n) of its structure with the old one, so applying an
// update costs the same with 10 keys or 100,000, and a reader keeps a
// consistent snapshot for as long as it holds one. The zero State is empty.
type State struct {
	root *node // nil when empty; see tree.go
}

// EmptyState is a State with no properties.
func EmptyState() State { return State{} }

// Get returns the value of key.
func (s State) Get(key string) (string, bool) {
	p, ok := s.root.get(key)
	return p.Value, ok
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
