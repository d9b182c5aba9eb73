package statesync

import (
	"context"
	"time"
)

// Contention management. A writer that has just won is already current, so
// its next conditional append leaves before a loser has caught up, and in a
// closed loop of back-to-back writes one writer can win hundreds of times in
// a row. Losers cannot make themselves heard (they write nothing), so the
// winner must notice: a synchronizer that has seen other writers get in
// lately (a conflict, or others' entries between its own) and has won
// yieldAfter times in a row, back to back, lets the others in before its
// next write. It yields by looking at the log, one round trip, and catches
// up if someone got in meanwhile: the round trip is about what a loser needs
// to catch up and try again, and unlike a sleep it is not rounded up to the
// scheduler's millisecond. Losers retry at once: a writer that lost is
// current again after its catch-up, and any wait would only let the winner
// win again.
//
// Writers that pause between writes, as people and most programs do, never
// yield; neither does a writer that has seen no one else lately.
type contention struct {
	lastLanded uint64    // revision of this synchronizer's last commit
	landedAt   time.Time // when it landed
	streak     int       // commits in a row with no other writer's entry between
	seenOthers time.Time // when another writer last got in before this one
}

// yieldAfter is how many wins in a row a writer takes under contention
// before it lets the others in.
const yieldAfter = 2

var (
	// contendedFor is how long a sign of other writers counts.
	contendedFor = 100 * time.Millisecond
	// backToBack: a write that starts later than this after the last one
	// landed is not part of a closed loop, and never yields.
	backToBack = 5 * time.Millisecond
)

// landed records a commit of this synchronizer based on base, at rev.
func (c *contention) landed(base, rev uint64, now time.Time) {
	if c.lastLanded != 0 && base == c.lastLanded {
		c.streak++
	} else {
		if c.lastLanded != 0 && base > c.lastLanded {
			c.seenOthers = now // others wrote since this writer's last commit
		}
		c.streak = 1
	}
	c.lastLanded, c.landedAt = rev, now
}

// lost records a try that another writer beat.
func (c *contention) lost(now time.Time) {
	c.seenOthers = now
	c.streak = 0
}

// shouldYield: a write based on base, starting now, should let others in
// first.
func (c *contention) shouldYield(base uint64, now time.Time) bool {
	return c.streak >= yieldAfter && base == c.lastLanded &&
		now.Sub(c.seenOthers) < contendedFor && now.Sub(c.landedAt) < backToBack
}

// yieldLocked lets other writers in before a write based on cur's revision,
// if this synchronizer keeps winning under contention: it looks at the log
// and catches up to anything that landed meanwhile.
func (s *Synchronizer[S]) yieldLocked(ctx context.Context) error {
	base := s.local.Load().Revision
	if !s.contention.shouldYield(base, time.Now()) {
		return nil
	}
	s.contention.streak = 0
	last, err := s.log.LastRevision(ctx)
	if err != nil || last == base {
		return err
	}
	s.contention.lost(time.Now())
	_, err = s.fetchLocked(ctx, last)
	return err
}
