package statesync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// lookingLog counts how often writers look at the log's last revision.
type lookingLog struct {
	*statesync.MemLog
	looks atomic.Int64
}

func (l *lookingLog) LastRevision(ctx context.Context) (uint64, error) {
	l.looks.Add(1)
	return l.MemLog.LastRevision(ctx)
}

// conflictsOf runs an increment through s and returns how many of its
// tries lost.
func conflictsOf(t *testing.T, s *statesync.Synchronizer[counter], trace *[]statesync.Attempt) int {
	t.Helper()
	*trace = nil
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range *trace {
		if a.Conflict != nil {
			n++
		}
	}
	return n
}

// winAfterRival: a wins twice in a row back to back, having seen b get in
// before; then b writes, and a writes again. It returns how many tries a's
// last write lost and how often a looked at the log for it.
func winAfterRival(t *testing.T) (lost int, looks int64) {
	ctx := context.Background()
	log := &lookingLog{MemLog: statesync.NewMemLog("t")}
	var trace []statesync.Attempt
	a := newCounter(t, log, statesync.WithTrace(func(at statesync.Attempt) { trace = append(trace, at) }))
	b := newCounter(t, log)
	for _, s := range []*statesync.Synchronizer[counter]{a, b, a, a, b} {
		if _, err := increment(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	before := log.looks.Load()
	lost = conflictsOf(t, a, &trace)
	return lost, log.looks.Load() - before
}

// A writer that keeps winning back to back while others write lets them in:
// before its next write it looks at the log, and so catches up to b's entry
// instead of losing a try to it.
func TestWinnerLooksAtTheLogBeforeWritingAgain(t *testing.T) {
	statesync.SetContentionWindows(t, time.Hour, time.Hour)
	if lost, looks := winAfterRival(t); lost != 0 || looks != 1 {
		t.Fatalf("the third write in a row lost %d tries after %d looks at the log; want 0 lost after 1 look", lost, looks)
	}
}

// A writer that pauses between writes, as people do, never yields.
func TestWriterThatPausesDoesNotYield(t *testing.T) {
	statesync.SetContentionWindows(t, time.Hour, time.Nanosecond)
	if lost, looks := winAfterRival(t); lost != 1 || looks != 0 {
		t.Fatalf("a write after a pause lost %d tries after %d looks at the log; want 1 lost try, no look", lost, looks)
	}
}

// A writer that has seen no one else writes without looking at the log.
func TestLoneWriterDoesNotYield(t *testing.T) {
	statesync.SetContentionWindows(t, time.Hour, time.Hour)
	log := &lookingLog{MemLog: statesync.NewMemLog("t")}
	s := newCounter(t, log)
	before := log.looks.Load()
	for range 10 {
		if _, err := increment(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	if looks := log.looks.Load() - before; looks != 0 {
		t.Fatalf("a lone writer looked at the log %d times in 10 writes; want none", looks)
	}
}
