package timeline

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Width is the widest line the text drawing makes.
const Width = 100

// timeWidth is the width of the column that gives each try's time.
const timeWidth = 8

// ANSI colours of the outcomes.
const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	cyan   = "\x1b[36m"
	blue   = "\x1b[34m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

// WriteText draws t for a terminal: time goes down, one column per lane,
// each try at the revision it was based on; then the stream's tape and the
// leases. color adds ANSI colours.
func WriteText(w io.Writer, t *Timeline, color bool) error {
	p := &printer{w: w, color: color}
	if len(t.Lanes) == 0 {
		p.line("(no writers)")
		return p.err
	}
	cell := max((Width-timeWidth)/len(t.Lanes)-1, 6)
	p.lanesHeader(t, cell)
	var start time.Time
	if len(t.Tries) > 0 {
		start = t.Tries[0].At
	}
	section := ""
	for _, tr := range t.Tries {
		if tr.Section != section {
			section = tr.Section
			head := truncate("-- "+section+" ", Width)
			p.line(head + strings.Repeat("-", Width-utf8.RuneCountInString(head)))
			start = tr.At
		}
		p.tryRow(t, tr, start, cell)
	}
	if slices.ContainsFunc(t.Tries, func(tr Try) bool { return tr.Outcome != Recorded }) {
		// A drawing of a log (timeline) shows entries as rN, and no tries.
		p.line("#N on rB: try N, based on revision B;  ✓ committed at;  ✗ refused, the stream was at;  = no write")
	}
	if slices.ContainsFunc(t.Tries, func(tr Try) bool { return tr.HeldBack > 0 }) {
		p.line("(w 3ms): the try first waited 3ms for older writers' turns")
	}
	if slices.ContainsFunc(t.Tries, func(tr Try) bool { return tr.Outcome == Carried }) {
		p.line("#N on rB ⇢ rR (bob's entry): handed to bob, whose entry at rR carried it (no try of its own)")
	}
	p.tape(t)
	p.leases(t)
	return p.err
}

type printer struct {
	w     io.Writer
	color bool
	err   error
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, s)
	}
}

func (p *printer) paint(colour, s string) string {
	if !p.color || colour == "" {
		return s
	}
	return colour + s + reset
}

func (p *printer) lanesHeader(t *Timeline, cell int) {
	var b strings.Builder
	b.WriteString(pad("time", timeWidth))
	for _, name := range t.Lanes {
		b.WriteString("|")
		b.WriteString(p.paint(bold, pad(name, cell)))
	}
	p.line(strings.TrimRight(b.String(), " "))
}

func (p *printer) tryRow(t *Timeline, tr Try, start time.Time, cell int) {
	var b strings.Builder
	b.WriteString(pad(fmt.Sprintf("+%.3fs", tr.At.Sub(start).Seconds()), timeWidth))
	for lane := range t.Lanes {
		b.WriteString("|")
		if lane != tr.Lane {
			b.WriteString(strings.Repeat(" ", cell))
			continue
		}
		text := cellText(tr, t.carrierOf(tr.Revision), cell)
		b.WriteString(p.paint(outcomeColour(tr.Outcome), text))
		b.WriteString(strings.Repeat(" ", cell-utf8.RuneCountInString(text)))
	}
	p.line(strings.TrimRight(b.String(), " "))
}

func outcomeColour(o Outcome) string {
	switch o {
	case Committed, Unconditional, Snapshot, Recorded:
		return green
	case Refused:
		return red
	case Confirmed:
		return yellow
	case Carried:
		return blue
	}
	return ""
}

// cellText is a try in at most width characters: the long form if it
// fits, with the write's operation if that fits too, else the short one.
// A carried try's long form names the writer that carried it (carrier).
func cellText(tr Try, carrier string, width int) string {
	long, short := tryForms(tr)
	if tr.HeldBack > 0 {
		long += fmt.Sprintf(" (w %s)", tr.HeldBack.Round(time.Millisecond))
		short += "w"
	}
	if tr.Outcome == Carried {
		// Who carried it is the point of the row: a tighter form keeps it.
		if full := fmt.Sprintf("%s (%s's entry)", long, carrier); utf8.RuneCountInString(full) <= width {
			long = full
		} else {
			long = fmt.Sprintf("%s (%s)", long, carrier)
		}
	}
	text := short
	if utf8.RuneCountInString(long) <= width {
		text = long
		if tr.What != "" && utf8.RuneCountInString(long)+3 < width {
			text = long + " · " + tr.What
		}
	}
	return truncate(text, width)
}

func tryForms(tr Try) (long, short string) {
	switch tr.Outcome {
	case Committed:
		return fmt.Sprintf("#%d on r%d ✓ r%d", tr.N, tr.Base, tr.Revision), fmt.Sprintf("%d@%d✓%d", tr.N, tr.Base, tr.Revision)
	case Refused:
		return fmt.Sprintf("#%d on r%d ✗ r%d", tr.N, tr.Base, tr.Current), fmt.Sprintf("%d@%d✗%d", tr.N, tr.Base, tr.Current)
	case Confirmed:
		return fmt.Sprintf("#%d on r%d =", tr.N, tr.Base), fmt.Sprintf("%d@%d=", tr.N, tr.Base)
	case Unconditional:
		return fmt.Sprintf("append ✓ r%d", tr.Revision), fmt.Sprintf("u✓%d", tr.Revision)
	case Snapshot:
		return fmt.Sprintf("#%d on r%d snapshot r%d", tr.N, tr.Base, tr.Revision), fmt.Sprintf("%d@%dS%d", tr.N, tr.Base, tr.Revision)
	case Carried:
		return fmt.Sprintf("#%d on r%d ⇢ r%d", tr.N, tr.Base, tr.Revision), fmt.Sprintf("%d@%d⇢%d", tr.N, tr.Base, tr.Revision)
	default:
		return fmt.Sprintf("r%d", tr.Revision), fmt.Sprintf("r%d", tr.Revision)
	}
}

func (p *printer) tape(t *Timeline) {
	if len(t.Tape) == 0 {
		return
	}
	p.line("The stream, revision by revision:")
	for _, e := range t.Tape {
		text := e.Text
		if e.Snapshot {
			text = "snapshot: " + text
		}
		if len(e.Carries) > 0 {
			// First, before the operations that the cut may take.
			text = "carries " + strings.Join(e.Carries, ", ") + ": " + text
		}
		row := fmt.Sprintf("  r%-4d %-12s %-10s %s", e.Revision, e.Time.UTC().Format("15:04:05.000"), truncate(t.laneName(e.Lane), 10), text)
		p.line(p.paint(cyan, truncate(row, Width)))
	}
}

func (p *printer) leases(t *Timeline) {
	for _, l := range t.Leases {
		row := fmt.Sprintf("  lease %s (%s): deadline %s, server time", l.Name, t.laneName(l.Lane), l.Deadline.UTC().Format("15:04:05.000"))
		p.line(p.paint(yellow, truncate(row, Width)))
		how := "revoked"
		if l.Expired {
			how = "expired"
		}
		if !l.Ended.IsZero() {
			row = fmt.Sprintf("    %s at r%d, written by %s; that entry's server time %s", how, l.EndedAt, t.laneName(l.EndedBy), l.Ended.UTC().Format("15:04:05.000"))
			p.line(p.paint(yellow, truncate(row, Width)))
		}
	}
}

func pad(s string, width int) string {
	s = truncate(s, width)
	return s + strings.Repeat(" ", width-utf8.RuneCountInString(s))
}

// truncate cuts s to width characters, marking the cut with an ellipsis.
// Characters that could drive a terminal (keys and values are anyone's
// text) are shown escaped first.
func truncate(s string, width int) string {
	s = printable(s)
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(width-1, 0)]) + "…"
}

// printable escapes, as Go quotes them, the characters of s that are not
// printable, and leaves the rest.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strconv.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
