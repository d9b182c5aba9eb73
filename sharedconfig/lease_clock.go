package sharedconfig

import "time"

// logTime is what a read told of the log's clock: the time the log stored
// the newest entry read, and the local time the read ended
// (statesync.Synchronizer.LastLogTime).
type logTime struct{ Stored, Seen time.Time }

// serverClock estimates the server's clock from the log's times alone. A
// read that saw an entry stored at T ended when the server's clock stood at
// T or later, so T plus the local time elapsed since is a lower bound of
// the server's clock now; the estimate is the highest such bound. The local
// clock only measures elapsed time (monotonically), so a process whose wall
// clock is off, or is set while it runs, estimates the same.
//
// Bounds are kept for one to two windows: a server clock that steps back
// (a new stream leader whose clock is behind the old one's) is followed
// once the bounds from before the step age out, instead of being overrun
// forever by them.
type serverClock struct {
	cur, prev   logTime // the best bounds of this window and the last
	windowStart time.Time
}

// serverClockWindow is how long a bound stands before a later, lower one
// may replace it.
const serverClockWindow = time.Minute

// observe takes in what a read saw of the log's clock, at local time now.
func (sc *serverClock) observe(lt logTime, now time.Time) {
	if lt.Stored.IsZero() {
		return
	}
	if now.Sub(sc.windowStart) >= serverClockWindow {
		sc.prev, sc.cur, sc.windowStart = sc.cur, logTime{}, now
	}
	if sc.cur.Stored.IsZero() || boundAt(lt, now).After(boundAt(sc.cur, now)) {
		sc.cur = lt
	}
}

// estimate is the server's clock at local time now: the best bound kept,
// or, before any read carried a time, the local clock (nothing decided on
// it then concerns a lease: every lease came in an entry that was read).
func (sc *serverClock) estimate(now time.Time) time.Time {
	best := sc.cur
	if !sc.prev.Stored.IsZero() && (best.Stored.IsZero() || boundAt(sc.prev, now).After(boundAt(best, now))) {
		best = sc.prev
	}
	if best.Stored.IsZero() {
		return now
	}
	return boundAt(best, now)
}

// boundAt is the lower bound lt gives of the server's clock at local time
// now.
func boundAt(lt logTime, now time.Time) time.Time {
	return lt.Stored.Add(now.Sub(lt.Seen))
}
