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
	dryRun       bool
	expectedLast uint64 // 0: whatever the log's last revision is
}

// DryRun: Repair only lists what it would discard, and writes nothing.
func DryRun() RepairOption { return func(o *repairOptions) { o.dryRun = true } }

// IfLastRevision: Repair writes only if the log still ends at revision
// last (what a dry run reported and someone agreed to discard).
func IfLastRevision(last uint64) RepairOption {
	return func(o *repairOptions) { o.expectedLast = last }
}

// errNothingToRepair: the log reads to its end.
var errNothingToRepair = errors.New("every entry reads: nothing to repair")

// Repair lists the entries after the local copy's revision, decoded where
// they decode, and, if one of them does not read, writes the local state
// as a snapshot after the last of them, which drops them all. The snapshot
// is conditional on the log's last revision, so a write that lands
// meanwhile makes Repair fail with statesync.ErrConflict, having changed
// nothing.
func (c *Config) Repair(ctx context.Context, opts ...RepairOption) (RepairReport, error) {
	var o repairOptions
	for _, opt := range opts {
		opt(&o)
	}
	r, err := c.planRepair(ctx)
	switch {
	case err != nil || o.dryRun:
		return r, err
	case o.expectedLast != 0 && r.LastRevision != o.expectedLast:
		return r, fmt.Errorf("%w: the log ends at revision %d, not %d; nothing was written", statesync.ErrConflict, r.LastRevision, o.expectedLast)
	case !r.Damaged():
		return r, errNothingToRepair
	}
	data, err := codec{}.EncodeInitial(snapshotUpdate{c.State()})
	if err != nil {
		return r, err
	}
	at, err := c.Log().CompactAfter(ctx, statesync.Position{Revision: r.LastRevision}, data)
	if errors.Is(err, statesync.ErrConflict) {
		return r, fmt.Errorf("%w %d while repairing; nothing was written", statesync.ErrConflict, r.LastRevision)
	}
	if err != nil {
		return r, err
	}
	r.Snapshot = at.Revision
	return r, c.Refresh(ctx)
}

// planRepair lists the entries after the local copy's revision.
func (c *Config) planRepair(ctx context.Context) (RepairReport, error) {
	r := RepairReport{GoodRevision: c.State().Revision()}
	var err error
	if r.LastRevision, err = lastRevision(ctx, c.Log()); err != nil {
		return r, err
	}
	err = c.readChanges(ctx, r.GoodRevision, r.LastRevision, func(ch Change) { r.Discarded = append(r.Discarded, ch) })
	if errors.Is(err, statesync.ErrEmptied) {
		err = nil // purged: no entry left to read, none that does not
	}
	return r, err
}
