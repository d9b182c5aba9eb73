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
	return s.with(set(u.Key, Property{Value: u.Value, Revision: revision}))
}

// Apply implements statesync.Update.
func (u Remove) Apply(s State, _ uint64) State {
	if _, ok := s.Lookup(u.Key); !ok {
		return s
	}
	return s.with(del(u.Key))
}

// Apply implements statesync.Update. Leases stay, holding no keys.
func (Clear) Apply(s State, _ uint64) State {
	s.root = nil
	return s
}

// Create implements statesync.InitialUpdate. The properties keep the
// revisions that set them.
func (u Snapshot) Create(uint64) State { return u.State }

// importedSnapshot is a snapshot that sets keys as well (an import too
// large for one update): the keys in set, whose revision in State is 0,
// take the snapshot's own revision, which only the log can tell.
type importedSnapshot struct {
	State State
	set   []string
}

// Create implements statesync.InitialUpdate.
func (u importedSnapshot) Create(revision uint64) State {
	changes := make([]change, 0, len(u.set))
	for _, k := range slices.Sorted(slices.Values(u.set)) {
		if p, ok := u.State.Lookup(k); ok && p.Revision == 0 {
			p.Revision = revision
			changes = append(changes, set(k, p))
		}
	}
	return u.State.with(changes...)
}

var (
	_ statesync.Update[State]        = Put{}
	_ statesync.Update[State]        = Remove{}
	_ statesync.Update[State]        = Clear{}
	_ statesync.InitialUpdate[State] = Snapshot{}
)

// ApplyAll implements statesync.BatchState: only the last change to each key
// after the last Clear matters, so a catch-up that writes the same keys many
// times touches the persistent map once per key, and each leaf once. A batch
// with other updates (a lease's) is applied in order: a lease's update
// before a Clear still counts.
func (s State) ApplyAll(updates []statesync.Pending[State]) State {
	for _, p := range updates {
		switch p.Update.(type) {
		case Put, Remove, Clear:
		default:
			for _, p := range updates {
				s = statesync.ApplyPending(s, p)
			}
			return s
		}
	}
	start := 0
	for i := len(updates) - 1; i >= 0; i-- {
		if _, ok := updates[i].Update.(Clear); ok {
			s, start = Clear{}.Apply(s, 0), i+1
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
		}
	}
	changes := make([]change, 0, len(last))
	for k, i := range last {
		if put, ok := updates[i].Update.(Put); ok {
			changes = append(changes, set(k, Property{Value: put.Value, Revision: updates[i].Revision}))
		} else {
			changes = append(changes, del(k))
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return strings.Compare(a.key, b.key) })
	return s.with(changes...)
}

var _ statesync.BatchState[State] = State{}
