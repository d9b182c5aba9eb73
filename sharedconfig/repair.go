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

// RepairPlan is what Repair would do: write the local state, at
// GoodRevision, as a snapshot after LastRevision, dropping Discarded.
type RepairPlan struct {
	GoodRevision, LastRevision uint64
	// Discarded are the entries after GoodRevision; those that do not
	// read have Damage set.
	Discarded []Change
}

// Damaged reports whether an entry after the good state does not read:
// only then is there something to repair (entries that read are merely not
// caught up with, and Refresh is the cure).
func (p RepairPlan) Damaged() bool {
	for _, d := range p.Discarded {
		if d.Damage != "" {
			return true
		}
	}
	return false
}

// PlanRepair lists the entries after the local copy's revision, decoded
// where they decode.
func (c *Config) PlanRepair(ctx context.Context) (RepairPlan, error) {
	p := RepairPlan{GoodRevision: c.State().Revision()}
	var err error
	if p.LastRevision, err = lastRevision(ctx, c.Log()); err != nil {
		return p, err
	}
	err = c.readChanges(ctx, p.GoodRevision, p.LastRevision, func(ch Change) { p.Discarded = append(p.Discarded, ch) })
	return p, err
}

// ErrNothingToRepair: the log reads to its end.
var ErrNothingToRepair = errors.New("every entry reads: nothing to repair")

// Repair carries out plan: it writes the local state as a snapshot, only if
// the log is still at plan.LastRevision, and drops every entry before it.
// It returns the snapshot's revision.
func (c *Config) Repair(ctx context.Context, plan RepairPlan) (uint64, error) {
	if !plan.Damaged() {
		return 0, ErrNothingToRepair
	}
	data, err := codec{}.EncodeInitial(snapshotUpdate{c.State()})
	if err != nil {
		return 0, err
	}
	at, err := c.Log().CompactAfter(ctx, statesync.Position{Revision: plan.LastRevision}, data)
	if errors.Is(err, statesync.ErrConflict) {
		return 0, fmt.Errorf("the stream moved past revision %d while repairing (someone wrote to it): nothing was changed; look again", plan.LastRevision)
	}
	if err != nil {
		return 0, err
	}
	return at.Revision, c.Refresh(ctx)
}
