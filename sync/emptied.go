package statesync

import "fmt"

// A log whose entries were all removed with no snapshot in their place (a
// JetStream stream purged by hand) holds no state, though its revisions
// went on: ReadAfter says so with ErrEmptied. The synchronizer takes it
// for an empty log that ends at that revision: a copy holds no state
// there, reads see an empty state without writing, and Initialize writes
// the initial state after it.

// emptiedLocked is fetchLocked's answer when the log holds no state up to
// target (err wraps ErrEmptied). The copy then holds none, at target. One
// that held a state says it lost it (err), so that a write does not append
// an update that no initial state precedes; one that held none is as the
// log, and nothing went wrong.
func (s *Synchronizer[S]) emptiedLocked(held bool, target uint64, err error) (uint64, error) {
	s.local.Store(&local[S]{revisioned: revisioned[S]{Revision: target}, compactedAt: target, emptied: true, purgedAt: target})
	s.purgeMet.Store(target)
	if held {
		return target, &PurgedError{UpTo: target, err: err}
	}
	return target, nil
}

// The snapshot that starts an emptied log again (Initialize) says up to
// where it was purged, and every compaction after it says so again
// (Entry.Purged): a copy that held a state from before the purge and reads
// such a snapshot learns that its state was purged, not compacted, however
// long after.

// purgedAcrossLocked is fetchLocked's answer when a copy that held a state
// read a snapshot at again saying the log was purged up to upTo, since the
// copy's revision: the copy holds what the log holds now, and says what
// became of its state (unless the read failed later, err).
func (s *Synchronizer[S]) purgedAcrossLocked(upTo, again uint64, err error) error {
	s.purgeMet.Store(upTo)
	if err != nil {
		return err
	}
	return &PurgedError{UpTo: upTo, Again: again, err: fmt.Errorf("%s: its entries up to %d were removed with no snapshot in their place, and it started again at %d", s.log.Name(), upTo, again)}
}

// PurgedError: the entries a copy had read were removed from the log by
// hand, up to UpTo, with no snapshot in their place. The copy dropped its
// state: it holds none (the log holds none: the error wraps ErrEmptied),
// or, when the log started again since (at Again), what the log holds now.
// The call that met it wrote nothing.
type PurgedError struct {
	UpTo, Again uint64
	err         error
}

func (e *PurgedError) Error() string { return e.err.Error() }
func (e *PurgedError) Unwrap() error { return e.err }

// Purged returns the revision up to which this synchronizer last met the
// log purged by hand: read emptied there (ErrEmptied), or, with a state
// from before, started again after it (PurgedError). 0 if it never did.
func (s *Synchronizer[S]) Purged() uint64 { return s.purgeMet.Load() }

// A purge that keeps some entries, the first of them an update, leaves a
// log whose state is gone (ErrStateGone): the update changes a state
// nobody can read any more. A copy that held one may know it, but no other
// process can, so the copy drops it too, and every process says the same.
// Reads then have no state to answer from (Gone), and writes fail with the
// error, until a snapshot (a repair) comes.

// goneLocked is fetchLocked's answer when the log's state is gone (err
// wraps ErrStateGone): the copy holds none, stands at no revision, and
// err is returned whatever it held.
func (s *Synchronizer[S]) goneLocked(err error) (uint64, error) {
	s.local.Store(&local[S]{gone: err})
	return 0, err
}

// Gone returns the error that said the log's state is gone (it wraps
// ErrStateGone) while the copy holds no state for that reason, and nil
// otherwise: State's zero state is then not the log's, and nothing is.
func (s *Synchronizer[S]) Gone() error { return s.local.Load().gone }

// noStateLocked is the error of a write whose copy holds no state: a read
// made while the write went on (of the entry an answer named, say, see
// combine.go) found the log emptied, its state gone, or the log deleted,
// and left the copy so. An update appended there would follow no state:
// bound to the copy's revision alone (the copy knows no entry there), it
// would land after a purge, and every reader would then find the log's
// state unknown.
func (s *Synchronizer[S]) noStateLocked(cur local[S]) error {
	switch {
	case cur.gone != nil:
		return cur.gone
	case cur.emptied:
		return &PurgedError{UpTo: cur.Revision, err: fmt.Errorf("%s: up to %d: %w", s.log.Name(), cur.Revision, ErrEmptied)}
	case cur.dropped:
		return fmt.Errorf("%s: %w", s.log.Name(), ErrDeleted) // the next Initialize creates it again
	}
	return fmt.Errorf("%s: %w", s.log.Name(), errNotInitialized)
}
