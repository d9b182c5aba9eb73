package sharedconfig

import (
	"context"
	"errors"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// load makes the local copy current: from the checkpoint resume, if it is
// one, reading only the entries after it, or else from the whole log
// (creating the config, empty, if the log holds nothing, unless the
// process mostly reads: see Options.MostlyReads).
func (c *Config) load(ctx context.Context, resume []byte) error {
	if len(resume) > 0 && c.sync.Resume(resume) == nil {
		err := c.sync.Fetch(ctx)
		// Replaced, or purged and started again: the copy was dropped and
		// the log loaded afresh (or, if that failed, Initialize below
		// tries again); deleted or emptied: the copy was dropped, and the
		// log is loaded as opening it without the checkpoint would.
		var purged *statesync.PurgedError
		if err == nil || !errors.Is(err, statesync.ErrReplaced) && !errors.Is(err, statesync.ErrDeleted) && !errors.Is(err, statesync.ErrEmptied) && !errors.As(err, &purged) {
			return err
		}
	}
	if c.opts.MostlyReads {
		return c.sync.Fetch(ctx)
	}
	return c.sync.Initialize(ctx, snapshotUpdate{State{}})
}

// Checkpoint encodes the local copy for Options.Resume of a later Open, in
// this process or another. ok is false when the copy cannot be resumed
// from safely: its last entry is this process's own write, whose log time
// it does not know (see statesync.Synchronizer.Checkpoint).
func (c *Config) Checkpoint() (data []byte, ok bool, err error) {
	return c.sync.Checkpoint(snapshotOf)
}
