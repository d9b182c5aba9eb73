package sharedconfig

import (
	"context"
	"errors"
	"fmt"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// DamagedError: the log holds an entry that cannot be read (it claims to be
// sharedconfig's but does not decode). Nothing after it can be applied, so
// no write can land until Repair writes the last good state past it.
type DamagedError struct {
	Entry *statesync.EntryError
	// GoodRevision is the revision of the last good state.
	GoodRevision uint64
	log          string // the log's name
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s: %v; the last good state is at revision %d", e.log, e.Entry, e.GoodRevision)
}

func (e *DamagedError) Unwrap() error { return e.Entry }

// RepairReport is what Repair found and did: the local state, at
// GoodRevision, written (or, on a dry run, to be written) as a snapshot
// after LastRevision, dropping Discarded.
type RepairReport struct {
	GoodRevision, LastRevision uint64
	// Discarded are the entries after GoodRevision; those that do not
	// read have Damage set.
	Discarded []Change
	// Snapshot is the revision of the snapshot written; 0 when nothing
	// was written.
	Snapshot uint64

	good, last statesync.Position // the entries at GoodRevision and LastRevision
	state      State              // the state at good, which the repair writes
}

// Damaged reports whether an entry after the good state does not read:
// only then is there something to repair (entries that read are merely not
// caught up with, and Refresh is the cure).
func (r RepairReport) Damaged() bool {
	for _, d := range r.Discarded {
		if d.Damage != "" {
			return true
		}
	}
	return false
}

// RepairOption changes what Repair does.
type RepairOption func(*repairOptions)

type repairOptions struct {
	dryRun bool
	plan   *RepairReport // nil: whatever the log holds now
}

// DryRun: Repair only lists what it would discard, and writes nothing.
func DryRun() RepairOption { return func(o *repairOptions) { o.dryRun = true } }

// IfUnchanged: Repair writes only if the log and the local copy are still
// as the dry run plan found them (what someone agreed to discard): the
// log's last entry the same, by revision and by ID, and the good state the
// same. An entry written meanwhile fails it with statesync.ErrConflict; a
// config destroyed and created again meanwhile, even up to the same
// revision, with statesync.ErrReplaced.
func IfUnchanged(plan RepairReport) RepairOption {
	return func(o *repairOptions) { o.plan = &plan }
}

// errNothingToRepair: the log reads to its end.
var errNothingToRepair = errors.New("every entry reads: nothing to repair")

// Repair lists the entries after the local copy's revision, decoded where
// they decode, and, if one of them does not read, writes the local state
// as a snapshot after the last of them, which drops them all. The reading
// is bound to the ID of the local copy's entry, and the snapshot to the
// revision and ID of the last entry, as writes are, so a write that lands
// meanwhile makes Repair fail with statesync.ErrConflict, and a config
// destroyed and created again with statesync.ErrReplaced, having changed
// nothing.
func (c *Config) Repair(ctx context.Context, opts ...RepairOption) (RepairReport, error) {
	var o repairOptions
	for _, opt := range opts {
		opt(&o)
	}
	r, err := c.planRepair(ctx)
	if err == nil && o.plan != nil {
		err = r.unchangedSince(*o.plan)
	}
	switch {
	case o.dryRun:
		return r, err
	case err != nil:
		return r, nothingWritten(err)
	case !r.Damaged():
		return r, errNothingToRepair
	}
	data, err := codec{}.EncodeInitial(snapshotUpdate{r.state})
	if err != nil {
		return r, err
	}
	at, err := c.Log().CompactAfter(ctx, r.last, data)
	if errors.Is(err, statesync.ErrConflict) {
		err = fmt.Errorf("%w %d while repairing", statesync.ErrConflict, r.LastRevision)
	}
	if err != nil {
		return r, nothingWritten(err)
	}
	r.Snapshot = at.Revision
	return r, c.Refresh(ctx)
}

// nothingWritten is err, of a repair that wrote nothing, saying so where
// the log's answer leaves it in doubt: a conflict, another incarnation.
func nothingWritten(err error) error {
	if errors.Is(err, statesync.ErrConflict) || errors.Is(err, statesync.ErrReplaced) {
		return fmt.Errorf("%w; nothing was written", err)
	}
	return err
}

// unchangedSince refuses r, a plan made now, unless it is plan: the log
// ends at the same entry, and the good state is the same.
func (r RepairReport) unchangedSince(plan RepairReport) error {
	switch {
	case r.last.Revision != plan.last.Revision:
		return fmt.Errorf("%w: the log ends at revision %d, not %d", statesync.ErrConflict, r.LastRevision, plan.LastRevision)
	case r.last.ID != plan.last.ID:
		return fmt.Errorf("%w: its entry %d is not the one listed", statesync.ErrReplaced, r.LastRevision)
	case r.good != plan.good:
		return fmt.Errorf("%w: the last good state is not the one listed (revision %d, now %d)", statesync.ErrReplaced, plan.GoodRevision, r.GoodRevision)
	}
	return nil
}

// planRepair lists the entries after the local copy's revision, reading
// them bound to the local copy's entry.
func (c *Config) planRepair(ctx context.Context) (RepairReport, error) {
	st, good := c.sync.StatePosition()
	st.revision = good.Revision
	r := RepairReport{GoodRevision: good.Revision, good: good, state: st}
	var err error
	if r.last, err = c.Log().LastPosition(ctx); err != nil {
		return r, err
	}
	r.LastRevision = r.last.Revision
	err = c.readChanges(ctx, good, r.LastRevision, func(ch Change) { r.Discarded = append(r.Discarded, ch) })
	if errors.Is(err, statesync.ErrEmptied) {
		err = nil // purged: no entry left to read, none that does not
	}
	return r, err
}
