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

// SetTurnTimes sets how long a waiter is remembered unheard, how often a
// waiting writer repeats its word, how long one write may hold back in all,
// and within what time writes count as back to back, until the test ends.
func SetTurnTimes(t interface{ Cleanup(func()) }, stale, repeat, hold, loop time.Duration) {
	oldStale, oldRepeat, oldHold, oldLoop := staleAfter, heartbeat, maxHoldBack, backToBack
	staleAfter, heartbeat, maxHoldBack, backToBack = stale, repeat, hold, loop
	t.Cleanup(func() { staleAfter, heartbeat, maxHoldBack, backToBack = oldStale, oldRepeat, oldHold, oldLoop })
}

// TurnCommits is how many commits one turn holds at most.
const TurnCommits = turnCommits

// SetTurnTime sets how long one turn lasts at most, until the test ends.
func SetTurnTime(t interface{ Cleanup(func()) }, d time.Duration) {
	old := turnTime
	turnTime = d
	t.Cleanup(func() { turnTime = old })
}

// TurnID is the id a synchronizer's words name it by.
func TurnID[S any](s *Synchronizer[S]) string { return s.turns.id }
