package sharedconfig

import (
	"slices"
	"strings"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The updates a shared config is made of. Each is a value, so the
// synchronizer may apply it to as many states as it needs.
type (
	// putUpdate sets Key to Value.
	putUpdate struct{ Key, Value string }
	// removeUpdate deletes Key.
	removeUpdate struct{ Key string }
	// clearUpdate deletes every key.
	clearUpdate struct{}
	// snapshotUpdate is a whole state: the initial update and every compaction.
	snapshotUpdate struct{ State State }
)

// Apply implements statesync.Update.
func (u putUpdate) Apply(s State, revision uint64) State {
	return s.with(set(u.Key, Property{Value: u.Value, Revision: revision}))
}

// Apply implements statesync.Update.
func (u removeUpdate) Apply(s State, _ uint64) State {
	if _, ok := s.Lookup(u.Key); !ok {
		return s
	}
	return s.with(del(u.Key))
}

// Apply implements statesync.Update. Leases stay, holding no keys.
func (clearUpdate) Apply(s State, _ uint64) State {
	s.root = nil
	return s
}

// Create implements statesync.InitialUpdate. The properties keep the
// revisions that set them.
func (u snapshotUpdate) Create(uint64) State { return u.State }

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
	_ statesync.Update[State]        = putUpdate{}
	_ statesync.Update[State]        = removeUpdate{}
	_ statesync.Update[State]        = clearUpdate{}
	_ statesync.InitialUpdate[State] = snapshotUpdate{}
)

// applyAll applies a run of updates for a catch-up (statesync.WithBatch):
// only the last change to each key after the last Clear matters, so a
// catch-up that writes the same keys many times touches the persistent map
// once per key, and each leaf once. A batch
// with other updates (a lease's) is applied in order: a lease's update
// before a Clear still counts.
func (s State) applyAll(updates []statesync.Update[State], revisions []uint64) State {
	for _, u := range updates {
		switch u.(type) {
		case putUpdate, removeUpdate, clearUpdate:
		default:
			for i, u := range updates {
				s = u.Apply(s, revisions[i])
			}
			return s
		}
	}
	start := 0
	for i := len(updates) - 1; i >= 0; i-- {
		if _, ok := updates[i].(clearUpdate); ok {
			s, start = clearUpdate{}.Apply(s, 0), i+1
			break
		}
	}
	last := make(map[string]int, len(updates)-start)
	for i := start; i < len(updates); i++ {
		switch u := updates[i].(type) {
		case putUpdate:
			last[u.Key] = i
		case removeUpdate:
			last[u.Key] = i
		}
	}
	changes := make([]change, 0, len(last))
	for k, i := range last {
		if put, ok := updates[i].(putUpdate); ok {
			changes = append(changes, set(k, Property{Value: put.Value, Revision: revisions[i]}))
		} else {
			changes = append(changes, del(k))
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return strings.Compare(a.key, b.key) })
	return s.with(changes...)
}

// applyAt applies u as of revision, at the log's time on its entry when u
// is timed (as the synchronizer does).
func applyAt(s State, u statesync.Update[State], revision uint64, at time.Time) State {
	if tu, ok := u.(statesync.TimedUpdate[State]); ok {
		return tu.ApplyAt(s, revision, at.Round(0))
	}
	return u.Apply(s, revision)
}
