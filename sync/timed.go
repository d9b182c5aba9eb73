package statesync

import "time"

// TimedUpdate is an update whose effect depends on when the log stored it:
// a lease's deadline, say. ApplyAt gets the entry's time as the log
// recorded it (Entry.Time, the server's clock for a shared log), so every
// process that replays the log applies it the same way; no reader's clock
// takes part. Apply is still required, for a log that records no time: it
// should act as ApplyAt with the zero time.
//
// A writer does not learn the stored time from an append, so after
// appending an entry that holds a TimedUpdate the synchronizer reads the
// entry back rather than applying it locally.
type TimedUpdate[S any] interface {
	Update[S]
	ApplyAt(s S, revision uint64, at time.Time) S
}

func applyOne[S any](s S, u Update[S], revision uint64, at time.Time) S {
	if tu, ok := u.(TimedUpdate[S]); ok {
		return tu.ApplyAt(s, revision, at.Round(0)) // the wall clock only: as a log stores it
	}
	return u.Apply(s, revision)
}

// anyTimed: one of updates needs its entry's time.
func anyTimed[S any](updates []Update[S]) bool {
	for _, u := range updates {
		if _, ok := u.(TimedUpdate[S]); ok {
			return true
		}
	}
	return false
}
