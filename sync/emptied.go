package statesync

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
	s.local.Store(&local[S]{revisioned: revisioned[S]{Revision: target}, compactedAt: target, emptied: true})
	if held {
		return target, err
	}
	return target, nil
}

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
