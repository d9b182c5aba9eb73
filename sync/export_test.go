package statesync

import "context"

// Queued is how many UpdateState calls wait for the batch in flight.
func Queued[S any](s *Synchronizer[S]) int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.pending)
}

// TurnID is the id a synchronizer's words and entries name it by.
func TurnID[S any](s *Synchronizer[S]) string { return s.cm.ID() }

// ErrClosed is the error of a Follow after Close.
var ErrClosed = errClosed

// ErrNotInitialized is the error of an update on a log with no initial state.
var ErrNotInitialized = errNotInitialized

// CommitOnCopy appends updates as a write's try does, on the copy as it
// stands (commitLocked), without the checks a write makes first.
func CommitOnCopy[S any](ctx context.Context, s *Synchronizer[S], updates ...Update[S]) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLocked(ctx, *s.local.Load(), updates, nil, nil)
}
