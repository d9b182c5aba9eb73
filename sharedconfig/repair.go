package sharedconfig

import (
	"context"
	"errors"
	"fmt"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// DamagedError: the log holds an entry that cannot be read (it claims to be
// sharedconfig's but does not decode), or one whose state is gone (an
// update after entries purged by hand, statesync.ErrStateGone). Nothing
// after it can be applied, so no write can land until Repair writes a
// state past it.
type DamagedError struct {
	Entry *statesync.EntryError
	// GoodRevision is the revision of the last good state; 0 when there is
	// none (the log's state is gone).
	GoodRevision uint64
	log          string // the log's name
}

func (e *DamagedError) Error() string {
	if e.GoodRevision == 0 {
		return fmt.Sprintf("%s: %v; no state is left to read", e.log, e.Entry)
	}
	return fmt.Sprintf("%s: %v; the last good state is at revision %d", e.log, e.Entry, e.GoodRevision)
}

// StateGone reports whether the damage is a purge's: the entries before
// Entry were removed by hand, and the state it changes with them.
func (e *DamagedError) StateGone() bool { return errors.Is(e.Entry, statesync.ErrStateGone) }

func (e *DamagedError) Unwrap() error { return e.Entry }

// RepairReport is what Repair found and did: the local state, at
// GoodRevision, written (or, on a dry run, to be written) as a snapshot
// after LastRevision, dropping Discarded.
type RepairReport struct {
	GoodRevision, LastRevision uint64
	// Purged, when not 0: the log was purged by hand up to Purged, and the
	// entries left start with an update, whose state is gone
	// (statesync.ErrStateGone). Repair then writes Left, the state those
	// entries set from none, in place of the local copy's; Kept lists them.
	Purged uint64
	Kept   []Change
	Left   State
	// Discarded are the entries after GoodRevision (or, when Purged, from
	// the first that does not read); those that do not read have Damage
	// set.
	Discarded []Change
	// Snapshot is the revision of the snapshot written; 0 when nothing
	// was written.
	Snapshot uint64

	good, last statesync.Position // the entries at GoodRevision and LastRevision
	state      State              // what the repair writes: the state at good, or Left
}

// Damaged reports whether an entry after the good state does not read, or
// the log's state is gone: only then is there something to repair
// (entries that read are merely not caught up with, and Refresh is the
// cure).
func (r RepairReport) Damaged() bool {
	if r.Purged > 0 {
		return true
	}
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
// as a snapshot after the last of them, which drops them all (when the
// log's state is gone, what the entries left set: RepairReport.Left). The reading
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
	at, err := c.Log().CompactAfter(statesync.PurgedContext(ctx, r.Purged), r.last, data)
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
// them bound to the local copy's entry; when the log's state is gone,
// every entry left, and the state they set.
func (c *Config) planRepair(ctx context.Context) (RepairReport, error) {
	st, good := c.sync.StatePosition()
	st.revision = good.Revision
	r := RepairReport{GoodRevision: good.Revision, good: good, state: st}
	var err error
	if r.last, err = c.Log().LastPosition(ctx); err != nil {
		return r, err
	}
	r.LastRevision = r.last.Revision
	var gone *statesync.EntryError
	if errors.As(c.sync.Gone(), &gone) {
		return c.planLeft(ctx, r, gone.Revision)
	}
	err = c.readChanges(ctx, good, r.LastRevision, func(ch Change) { r.Discarded = append(r.Discarded, ch) })
	return r, err
}

// planLeft plans the repair of a log whose state is gone from entry first
// on: every entry left up to the first that does not read is kept, as the
// state they set from none (what they changed before is gone, what they
// set is known); the rest are discarded, as after any damage.
func (c *Config) planLeft(ctx context.Context, r RepairReport, first uint64) (RepairReport, error) {
	r.Purged = first - 1
	stop := r.LastRevision
	err := c.readChanges(ctx, statesync.Position{Revision: r.Purged}, r.LastRevision, func(ch Change) {
		if ch.Damage != "" && stop == r.LastRevision {
			stop = ch.Revision - 1
		}
		if ch.Revision > stop {
			r.Discarded = append(r.Discarded, ch)
		} else {
			r.Kept = append(r.Kept, ch)
		}
	})
	if err != nil || stop == r.Purged {
		return r, err
	}
	r.Left, err = c.stateLeft(ctx, r.Purged, stop)
	r.state = r.Left
	return r, err
}

// stateLeft is the state the entries after after up to upTo set, from
// none: each entry read, none of them damaged.
func (c *Config) stateLeft(ctx context.Context, after, upTo uint64) (State, error) {
	var st State
	err := c.Log().ReadAfter(ctx, statesync.Position{Revision: after}, upTo, func(e statesync.Entry) error {
		switch {
		case e.Foreign != "":
			return nil
		case e.Snapshot:
			init, err := codec{}.DecodeInitial(e.Data)
			if err != nil {
				return err
			}
			st = init.Create(e.Revision)
			return nil
		}
		updates, err := codec{}.DecodeUpdates(e.Data)
		if err != nil {
			return err
		}
		for _, u := range updates {
			st = applyAt(st, u, e.Revision, e.Time)
		}
		return nil
	})
	return st, err
}
