package sharedconfig

import statesync "github.com/sharedconfig/sharedconfig/sync"

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
	return State{s.m.Set(u.Key, Property{u.Value, revision})}
}

// Apply implements statesync.Update.
func (u Remove) Apply(s State, _ uint64) State { return State{s.m.Delete(u.Key)} }

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
