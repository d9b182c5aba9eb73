package demo

import (
	"fmt"
	"slices"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// HistoryNote says what a timeline read from a log can show.
const HistoryNote = "Drawn from the log: it keeps only the appends that landed, so refused tries are not in it; each entry is drawn as the try that landed it."

// FromHistory draws a config's recorded log: one lane per writer named in
// it (in order of first appearance), each entry as the try that landed it,
// and the leases st holds as bars.
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
	for name, l := range st.Leases() {
		t.Leases = append(t.Leases, timeline.Lease{Name: name, Lane: laneOf(l.Holder), From: l.Deadline.Add(-l.TTL), Deadline: l.Deadline})
	}
	return t
}

// Describe is a one-line account of what t holds.
func Describe(t *timeline.Timeline) string {
	return fmt.Sprintf("%d lanes, %d tries, %d revisions, %d leases", len(t.Lanes), len(t.Tries), len(t.Tape), len(t.Leases))
}
