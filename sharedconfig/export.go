package sharedconfig

import (
	"context"
	"errors"
	"maps"
	"slices"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// ImportResult says what an Import changed.
type ImportResult struct {
	Added, Updated, Unchanged, Removed int
	// AsSnapshot: too large for one update, the import was written as a
	// snapshot (see Import).
	AsSnapshot bool
}

// Import sets every key of props to its value as one update, so that it
// lands whole or not at all; with replace, the keys props lacks are removed
// in the same update. Keys that already have their value are not written.
// An update too large for one entry of the log is written as a snapshot of
// the state it makes instead (see importAsSnapshot): as conditional, as
// whole, but dropping the history before it, as compaction does.
func (c *Config) Import(ctx context.Context, props map[string]string, replace bool) (ImportResult, error) {
	strs := make([]string, 0, 2*len(props))
	for k, v := range props {
		strs = append(strs, k, v)
	}
	plan := func(s State) (updates, ImportResult) { return importUpdates(s, props, replace) }
	// An update the log is known to refuse is not encoded (a copy of the
	// whole import, and more) only to be refused: nothing is written, and
	// the import goes on as a snapshot.
	tooLarge := false
	r, err := update(ctx, c, func(s State) (updates, ImportResult) {
		ups, r := plan(s)
		if tooLarge = c.refusesUpdate(ups); tooLarge {
			return nil, r
		}
		return ups, r
	}, strs...)
	if tooLarge || errors.Is(err, statesync.ErrTooLarge) {
		return c.importAsSnapshot(ctx, plan)
	}
	return r, err
}

// maxUpdateSizer is a log that says how large an update entry it takes
// (jetstream.Log does).
type maxUpdateSizer interface{ MaxUpdateSize() int }

// refusesUpdate reports whether the log certainly refuses ups as one
// update entry: their keys and values alone, which the entry holds at
// least once, are larger than it takes.
func (c *Config) refusesUpdate(ups updates) bool {
	l, ok := c.Log().(maxUpdateSizer)
	if !ok {
		return false
	}
	limit, size := l.MaxUpdateSize(), 0
	for _, u := range ups {
		switch u := u.(type) {
		case putUpdate:
			size += len(u.Key) + len(u.Value)
		case removeUpdate:
			size += len(u.Key)
		}
		if size > limit {
			return true
		}
	}
	return false
}

// importAsSnapshot writes the state the import's updates make of the state
// read, on the condition that the log is still where it was read (see
// statesync.Replace). The keys it sets take the snapshot's revision.
func (c *Config) importAsSnapshot(ctx context.Context, plan func(State) (updates, ImportResult)) (ImportResult, error) {
	r, _, err := statesync.Replace(ctx, c.sync, func(s State) (statesync.InitialUpdate[State], ImportResult) {
		ups, r := plan(s)
		if len(ups) == 0 {
			return nil, r
		}
		set := make([]string, 0, len(ups))
		for _, u := range ups {
			if p, ok := u.(putUpdate); ok {
				set = append(set, p.Key)
			}
		}
		r.AsSnapshot = true
		return importedSnapshot{State: s.applyAll(ups, make([]uint64, len(ups))), set: set}, r
	})
	return r, err
}

// importUpdates is what an import of props does to s.
func importUpdates(s State, props map[string]string, replace bool) (updates, ImportResult) {
	var r ImportResult
	var ups updates
	if replace {
		for k := range s.All() {
			if _, keep := props[k]; !keep {
				ups = append(ups, removeUpdate{k})
				r.Removed++
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		old, ok := s.Lookup(k)
		switch {
		case !ok:
			r.Added++
		case old.Value == props[k] && old.Lease == "": // a plain put detaches a leased key
			r.Unchanged++
			continue
		default:
			r.Updated++
		}
		ups = append(ups, putUpdate{k, props[k]})
	}
	return ups, r
}
