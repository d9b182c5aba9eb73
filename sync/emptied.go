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
	s.local.Store(&local[S]{revisioned: revisioned[S]{Revision: target}, compactedAt: target})
	if held {
		return target, err
	}
	return target, nil
}
