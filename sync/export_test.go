package statesync

import (
	"context"
	"slices"
	"time"
)

// AppendRaw appends an entry as a foreign writer would, bypassing any codec:
// tests use it to put garbage in the log.
func (l *MemLog) AppendRaw(data []byte, snapshot bool) uint64 {
	rev, _ := l.add(context.Background(), AnyRevision, Entry{Data: slices.Clone(data), Snapshot: snapshot})
	return rev
}

// Queued is how many UpdateState calls wait for the batch in flight.
func Queued[S any](s *Synchronizer[S]) int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.pending)
}

// SetContentionWindows sets how long a sign of other writers counts and how
// soon after a commit a write is back to back, until the test ends.
func SetContentionWindows(t interface{ Cleanup(func()) }, contended, backToBackWithin time.Duration) {
	oldContended, oldBackToBack := contendedFor, backToBack
	contendedFor, backToBack = contended, backToBackWithin
	t.Cleanup(func() { contendedFor, backToBack = oldContended, oldBackToBack })
}
