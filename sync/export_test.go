package statesync

import (
	"context"
	"slices"
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

// TurnID is the id a synchronizer's words and entries name it by.
func TurnID[S any](s *Synchronizer[S]) string { return s.cm.id }
