package demo

import (
	"fmt"
	"slices"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// HistoryNote says what a timeline read from a log can show.
const HistoryNote = "Drawn from the log: it keeps only the appends that landed, so refused tries are not in it; each entry is drawn as the try that landed it."

// FromHistory draws a config's recorded log: one lane per writer named in
// it (in order of first appearance), each entry as the try that landed it,
// and as bars the leases the changes ended and those st holds.
func FromHistory(title string, changes []sharedconfig.Change, st sharedconfig.State) *timeline.Timeline {
	t := &timeline.Timeline{Title: title, Note: HistoryNote}
	laneOf := func(writer string) int {
		if writer == "" {
			writer = "(unknown writer)"
		}
		if i := slices.Index(t.Lanes, writer); i >= 0 {
			return i
		}
		t.Lanes = append(t.Lanes, writer)
		return len(t.Lanes) - 1
	}
	for _, ch := range changes {
		laneOf(ch.Writer)
	}
	t.Tape = TapeOf(changes, func(w string) int { return laneOf(w) })
	for i, e := range t.Tape {
		tr := timeline.Try{Lane: e.Lane, Write: i + 1, N: 1, What: e.Text, Revision: e.Revision, Outcome: timeline.Recorded, At: e.Time}
		if e.Snapshot {
			tr.What = "snapshot: " + e.Text
		}
		t.Tries = append(t.Tries, tr)
	}
	t.Leases = endedLeases(changes, laneOf)
	for name, l := range st.Leases() {
		t.Leases = append(t.Leases, timeline.Lease{Name: name, Lane: laneOf(l.Holder), From: l.Deadline.Add(-l.TTL), Deadline: l.Deadline})
	}
	return t
}

// endedLeases are the leases that changes end (expire or revoke), each as a
// bar from the entry that last set its deadline to its deadline, ended
// where it ended. A lease registered before the first change, and in no
// snapshot among them, has no known ttl and is left out.
func endedLeases(changes []sharedconfig.Change, laneOf func(string) int) []timeline.Lease {
	type life struct {
		holder   string
		ttl      time.Duration
		from     time.Time // the server time of the entry that set the deadline
		deadline time.Time
	}
	live := map[string]life{}
	var out []timeline.Lease
	for _, ch := range changes {
		if ch.Snapshot {
			clear(live)
			for name, l := range ch.State.Leases() {
				live[name] = life{l.Holder, l.TTL, l.Deadline.Add(-l.TTL), l.Deadline}
			}
		}
		for _, op := range ch.Ops {
			l, known := live[op.Lease]
			switch {
			case op.Kind == "register_lease":
				live[op.Lease] = life{op.Holder, op.TTL, ch.Time, ch.Time.Add(op.TTL)}
			case op.Kind == "refresh_lease" && known:
				l.from, l.deadline = ch.Time, ch.Time.Add(l.ttl)
				live[op.Lease] = l
			}
		}
		for _, e := range ch.Ended {
			l, known := live[e.Name]
			if !known {
				continue
			}
			delete(live, e.Name)
			out = append(out, timeline.Lease{Name: e.Name, Lane: laneOf(l.holder), From: l.from, Deadline: l.deadline,
				Ended: ch.Time, EndedAt: ch.Revision, EndedBy: laneOf(ch.Writer), Expired: e.Expired})
		}
	}
	return out
}

// Describe is a one-line account of what t holds.
func Describe(t *timeline.Timeline) string {
	return fmt.Sprintf("%s, %s, %s, %s", counted(len(t.Lanes), "lane", "lanes"), counted(len(t.Tries), "try", "tries"),
		counted(len(t.Tape), "revision", "revisions"), counted(len(t.Leases), "lease", "leases"))
}

func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
