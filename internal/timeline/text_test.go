package timeline

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func busyTimeline(lanes int) *Timeline {
	t := &Timeline{Title: "t"}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i := range lanes {
		t.Lanes = append(t.Lanes, strings.Repeat("w", 30)+string(rune('a'+i)))
	}
	for i := range 40 {
		o := []Outcome{Committed, Refused, Confirmed, Unconditional, Snapshot, Carried}[i%6]
		t.Tries = append(t.Tries, Try{Lane: i % lanes, Write: i, N: i%3 + 1, What: "PUT a very long key name , and a long value\x1b[31m",
			Base: 123456 + uint64(i), Revision: 123457 + uint64(i), Current: 123458, CaughtUp: 123458, Outcome: o,
			HeldBack: time.Duration(i%2) * time.Millisecond, At: at.Add(time.Duration(i) * time.Millisecond)})
		t.Tape = append(t.Tape, Entry{Revision: uint64(i + 1), Lane: i % lanes, Text: "PUT k\x07 = " + strings.Repeat("v", 200), Time: at,
			Carries: t.Lanes[:i%lanes]})
	}
	t.Leases = []Lease{{Name: "/servers/" + strings.Repeat("x", 80), Lane: 0, Deadline: at, Ended: at, Expired: true, EndedBy: 1}}
	return t
}

// Every line fits 100 columns, for 1 to 8 lanes, with or without colour,
// and nothing a key or value holds reaches the terminal as a control.
func TestTextFits100Columns(t *testing.T) {
	for lanes := 1; lanes <= 8; lanes++ {
		for _, colour := range []bool{false, true} {
			var b bytes.Buffer
			if err := WriteText(&b, busyTimeline(lanes), colour); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				plain := line
				for _, c := range []string{green, red, yellow, cyan, blue, bold, reset} {
					plain = strings.ReplaceAll(plain, c, "")
				}
				if n := utf8.RuneCountInString(plain); n > Width {
					t.Errorf("%d lanes: a line of %d columns: %q", lanes, n, plain)
				}
				if strings.ContainsAny(plain, "\x1b\x07") {
					t.Errorf("%d lanes: a control character reached the terminal: %q", lanes, plain)
				}
			}
			if got := strings.Contains(b.String(), "\x1b["); got != colour {
				t.Errorf("%d lanes, colour %v: escape sequences present: %v", lanes, colour, got)
			}
		}
	}
}

// Each try shows at its base revision with its outcome.
func TestTextShowsBaseAndOutcome(t *testing.T) {
	tl := &Timeline{Lanes: []string{"alice", "bob"}, Tries: []Try{
		{Lane: 0, N: 1, Base: 2, Revision: 3, Outcome: Committed},
		{Lane: 1, N: 1, Base: 2, Current: 3, CaughtUp: 3, Outcome: Refused},
		{Lane: 1, N: 2, Base: 3, Outcome: Confirmed},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, tl, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"|#1 on r2 ✓ r3", "|#1 on r2 ✗ r3", "|#2 on r3 ="} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

// A carried try shows, in its writer's lane, the entry that carried it and
// whose it is; the tape names, for each entry, the writers whose PUTs it
// carries; and only a drawing with carried tries explains the mark.
func TestTextShowsACarriedTry(t *testing.T) {
	tl := &Timeline{Lanes: []string{"alice", "bob"}, Tries: []Try{
		{Lane: 1, N: 1, Base: 3, Revision: 4, Outcome: Committed},
		{Lane: 0, N: 1, Base: 3, Revision: 4, Outcome: Carried},
	}, Tape: []Entry{{Revision: 4, Lane: 1, Text: "PUT bob = 1; PUT alice = 1", Carries: []string{"alice"}}}}
	var b bytes.Buffer
	if err := WriteText(&b, tl, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"|#1 on r3 ⇢ r4 (bob's entry)", "bob        carries alice: PUT bob = 1; PUT alice = 1", "handed to bob, whose entry at rR carried it"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	// Narrow lanes keep the carrier's name before they give up the long form.
	if got := cellText(tl.Tries[1], "bob", 20); got != "#1 on r3 ⇢ r4 (bob)" {
		t.Errorf("in 20 columns: %q", got)
	}
	tl.Tries, tl.Tape = tl.Tries[:1], nil
	b.Reset()
	if err := WriteText(&b, tl, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "⇢") {
		t.Errorf("a drawing with no carried try explains the mark:\n%s", b.String())
	}
}
