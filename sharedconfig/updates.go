package sharedconfig

import (
	"slices"
	"strings"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The updates a shared config is made of. Each is a value, so the
// synchronizer may apply it to as many states as it needs.
type (
	// Put sets Key to Value.
	Put struct{ Key, Value string }
	// Remove deletes Key.
	Remove struct{ Key string }
	// Clear deletes every key.
	Clear struct{}
	// Snapshot is a whole state: the initial update and every compaction.
	Snapshot struct{ State State }
)

// Apply implements statesync.Update.
func (u Put) Apply(s State, revision uint64) State {
	return State{s.root.apply([]change{{entry: entry{u.Key, Property{u.Value, revision}}}})}
}

// Apply implements statesync.Update.
func (u Remove) Apply(s State, _ uint64) State {
	if _, ok := s.root.get(u.Key); !ok {
		return s
	}
	return State{s.root.apply([]change{{entry: entry{key: u.Key}, del: true}})}
}

// Apply implements statesync.Update.
func (Clear) Apply(State, uint64) State { return EmptyState() }

// Create implements statesync.InitialUpdate. The properties keep the
// revisions that set them.
func (u Snapshot) Create(uint64) State { return u.State }

var (
	_ statesync.Update[State]        = Put{}
	_ statesync.Update[State]        = Remove{}
	_ statesync.Update[State]        = Clear{}
	_ statesync.InitialUpdate[State] = Snapshot{}
)

// ApplyAll implements statesync.BatchState: only the last change to each key
// after the last Clear matters, so a catch-up that writes the same keys many
// times touches the persistent map once per key, and each leaf once.
func (s State) ApplyAll(updates []statesync.Pending[State]) State {
	start := 0
	for i := len(updates) - 1; i >= 0; i-- {
		if _, ok := updates[i].Update.(Clear); ok {
			s, start = EmptyState(), i+1
			break
		}
	}
	last := make(map[string]int, len(updates)-start)
	for i := start; i < len(updates); i++ {
		switch u := updates[i].Update.(type) {
		case Put:
			last[u.Key] = i
		case Remove:
			last[u.Key] = i
		default: // an update this does not know: apply them in order
			for _, p := range updates[start:] {
				s = p.Update.Apply(s, p.Revision)
			}
			return s
		}
	}
	changes := make([]change, 0, len(last))
	for k, i := range last {
		if put, ok := updates[i].Update.(Put); ok {
			changes = append(changes, change{entry: entry{k, Property{put.Value, updates[i].Revision}}})
		} else {
			changes = append(changes, change{entry: entry{key: k}, del: true})
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return strings.Compare(a.key, b.key) })
	return State{s.root.apply(changes)}
}

var _ statesync.BatchState[State] = State{}
