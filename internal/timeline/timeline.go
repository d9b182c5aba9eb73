// Package timeline draws what writers did to a shared config: one lane per
// writer, each try of a conditional write at the revision it was based on
// with its outcome, the stream as a tape of revisions, and lease deadlines.
// It renders the same model as text for a terminal (text.go) and as one
// self-contained HTML page (html.go). It knows nothing of NATS or of where
// the events came from.
package timeline

import (
	"fmt"
	"time"
)

// Outcome is how a try ended.
type Outcome string

const (
	// Committed: the conditional append landed at Revision.
	Committed Outcome = "committed"
	// Refused: the stream had moved on to Current; the writer caught up to
	// CaughtUp and decided again.
	Refused Outcome = "refused"
	// Confirmed: the writer had nothing to write and the stream was still
	// at Base, so its answer held.
	Confirmed Outcome = "confirmed"
	// Unconditional: an append that could not be refused landed at
	// Revision.
	Unconditional Outcome = "unconditional"
	// Snapshot: a compaction's snapshot landed at Revision.
	Snapshot Outcome = "snapshot"
	// Recorded: the entry at Revision, read back from the log; the log
	// does not keep the tries that were refused.
	Recorded Outcome = "recorded"
	// Carried: the write was handed to another writer (combining), whose
	// entry at Revision committed it; this try was not made.
	Carried Outcome = "carried"
)

// Try is one try of one write.
type Try struct {
	Lane  int
	Write int // numbers the write the try belongs to; its tries share it
	N     int // 1 for a write's first try
	What  string
	Base  uint64
	// Revision is where a committed, unconditional or snapshot try landed.
	Revision uint64
	Outcome  Outcome
	Current  uint64 // refused: where the stream was
	CaughtUp uint64 // refused: where the writer caught up to
	HeldBack time.Duration
	At       time.Time
	// Section names the part of the run the try belongs to, where a run
	// has parts (the turns scenario's two runs).
	Section string
}

// Entry is one revision of the stream.
type Entry struct {
	Revision uint64
	Lane     int // -1: no lane wrote it (or the writer is unknown)
	Writer   string
	Text     string
	Snapshot bool
	Time     time.Time // the server's time on the entry
	// Dropped: a later snapshot replaced the entry; it was read before.
	Dropped bool
	// Carries names the writers whose handed PUTs the entry carries
	// (combining), each once, in the entry's order.
	Carries []string
}

// Lease is a lease's life, in the server's time.
type Lease struct {
	Name     string
	Lane     int
	From     time.Time // the server time of the entry that set Deadline
	Deadline time.Time
	// Ended, if not zero, is the server time of the entry that ended the
	// lease, at EndedAt, written by lane EndedBy.
	Ended   time.Time
	EndedAt uint64
	EndedBy int
	Expired bool // false: revoked (or still live if Ended is zero)
}

// Timeline is what a run did.
type Timeline struct {
	Title  string
	Note   string
	Lanes  []string
	Tries  []Try
	Tape   []Entry
	Leases []Lease
}

// LaneOf returns the lane named name, or -1.
func (t *Timeline) LaneOf(name string) int {
	for i, l := range t.Lanes {
		if l == name {
			return i
		}
	}
	return -1
}

// laneName is the name of lane i, or "-" outside the lanes.
func (t *Timeline) laneName(i int) string {
	if i < 0 || i >= len(t.Lanes) {
		return "-"
	}
	return t.Lanes[i]
}

// carrierOf names the writer of the entry at rev, as the tape knows it.
func (t *Timeline) carrierOf(rev uint64) string {
	for _, e := range t.Tape {
		if e.Revision == rev {
			if e.Lane >= 0 {
				return t.laneName(e.Lane)
			}
			if e.Writer != "" {
				return e.Writer
			}
		}
	}
	return "another writer"
}

// Describe says what a try did in a sentence.
func (tr Try) Describe() string {
	base := fmt.Sprintf("try %d on r%d", tr.N, tr.Base)
	if tr.HeldBack > 0 {
		base += fmt.Sprintf(" after waiting %s for older writers' turns", tr.HeldBack.Round(time.Millisecond))
	}
	switch tr.Outcome {
	case Committed:
		return fmt.Sprintf("%s: committed at r%d", base, tr.Revision)
	case Refused:
		return fmt.Sprintf("%s: refused, the stream was at r%d; caught up to r%d", base, tr.Current, tr.CaughtUp)
	case Confirmed:
		return base + ": nothing to write, and the stream was still there"
	case Unconditional:
		return fmt.Sprintf("unconditional append: landed at r%d", tr.Revision)
	case Snapshot:
		return fmt.Sprintf("%s: snapshot landed at r%d", base, tr.Revision)
	case Carried:
		return fmt.Sprintf("%s: handed over, and carried by another writer's entry at r%d", base, tr.Revision)
	default:
		return fmt.Sprintf("entry r%d", tr.Revision)
	}
}
