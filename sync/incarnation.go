package statesync

import (
	"context"
	"errors"
	"fmt"
)

// A log deleted and created again under its name (see Log) numbers
// its entries from 1 again. A copy read from the old incarnation must never
// take in the new one's entries, nor write into it: its writes are decided
// on a state the new log never held, and a compaction would replace entries
// it never read. So the synchronizer keeps the ID of the entry at its
// revision and binds every conditional write and every catch-up to it; it
// also takes a log whose last revision is below its own for another one.
// Finding either, it drops its copy, reloads the log, and reports
// ErrReplaced.

// position is where the local copy stands in the log.
func (l *local[S]) position() Position { return Position{Revision: l.Revision, ID: l.id} }

// replacedLocked handles err if it says the log is another incarnation than
// the local copy's: it drops the copy, loads the log afresh, and returns
// the error to report (ErrReplaced, with the reload's error if it failed).
// If err says the log was deleted, it drops the copy: the next Initialize
// creates the log again. Any other err is returned as it is.
func (s *Synchronizer[S]) replacedLocked(ctx context.Context, err error) error {
	if errors.Is(err, ErrDeleted) {
		s.dropLocked()
		return err
	}
	if !errors.Is(err, ErrReplaced) {
		return err
	}
	s.dropLocked()
	if _, reloadErr := s.fetchLocked(ctx, 0); reloadErr != nil {
		return errors.Join(err, fmt.Errorf("reloading it: %w", reloadErr))
	}
	return err
}

// dropLocked drops the local copy of a log deleted or replaced, and says
// so (WithDropped).
func (s *Synchronizer[S]) dropLocked() {
	s.local.Store(&local[S]{dropped: true})
	s.drops.Add(1)
	s.dropTaken()
	if s.dropped != nil {
		s.dropped()
	}
}

// shorterLog is the error for a log whose last revision, last, is below the
// local copy's: only another incarnation can be (compaction never moves the
// last revision back).
func (s *Synchronizer[S]) shorterLog(own, last uint64) error {
	return fmt.Errorf("%s: its last revision is %d, below the %d read from it: %w", s.log.Name(), last, own, ErrReplaced)
}

// reloadedLocked is fetchLocked's answer when it finds the log replaced
// (err): the copy is reloaded, and err reported.
func (s *Synchronizer[S]) reloadedLocked(ctx context.Context, err error) (uint64, error) {
	err = s.replacedLocked(ctx, err)
	return s.local.Load().Revision, err
}

// sameLengthLocked is fetchLocked's answer when the log's last revision is
// the copy's: nothing to read, unless the log is another incarnation of the
// same length (its entry there is not cur's).
func (s *Synchronizer[S]) sameLengthLocked(ctx context.Context, cur local[S]) (uint64, error) {
	if cur.id == "" {
		return cur.Revision, nil
	}
	err := s.log.ReadAfter(ctx, cur.position(), cur.Revision, func(Entry) error { return nil })
	if errors.Is(err, ErrReplaced) {
		return s.reloadedLocked(ctx, err)
	}
	if errors.Is(err, ErrEmptied) { // its entry went, and nothing came after
		return s.emptiedLocked(cur.initialized, cur.Revision, err)
	}
	if errors.Is(err, ErrStateGone) {
		return s.goneLocked(err)
	}
	return cur.Revision, err
}

// followDrops is what a follower has heard of its copy dropped. Another
// call (a write, a lease expiry) that finds the log deleted or created
// again drops the copy and tells only its caller; the follower's next read
// would then load the log created again as any new one, and its watchers
// would take the new log's entries, numbered from 1 again, for more of the
// same. So the follower tells onError of each drop it did not find itself,
// before it reads on.
type followDrops[S any] struct {
	s    *Synchronizer[S]
	seen uint64 // the drops counted when the follower last told or found one
	// toldDeleted: the drop told was of a log still deleted, which the
	// fetches after it find too: the same news, not told again.
	toldDeleted bool
}

// tell reports to onError a drop made since the follower last looked, as
// ErrDeleted while the copy stands nowhere and ErrReplaced once a reload
// took the new log in, unless that is what it said last (said); it returns
// what it said last now.
func (d *followDrops[S]) tell(onError func(error), said string) string {
	n := d.s.drops.Load()
	if n == d.seen || onError == nil {
		d.seen = n
		return said
	}
	d.seen = n
	err := fmt.Errorf("%s: %w", d.s.log.Name(), ErrReplaced)
	if _, ok := d.s.Revision(); !ok {
		err = fmt.Errorf("%s: %w", d.s.log.Name(), ErrDeleted)
	}
	d.toldDeleted = errors.Is(err, ErrDeleted)
	if err.Error() != said {
		onError(err)
	}
	return err.Error()
}

// fetched takes in the error of the follower's own fetch: a drop it found
// itself is told as that error, once; a log still deleted after the drop
// told is the same news.
func (d *followDrops[S]) fetched(err error, said string) string {
	if err == nil {
		d.toldDeleted = false
	}
	if !errors.Is(err, ErrDeleted) && !errors.Is(err, ErrReplaced) {
		return said
	}
	d.seen = d.s.drops.Load()
	if errors.Is(err, ErrDeleted) && d.toldDeleted {
		return err.Error()
	}
	return said
}
