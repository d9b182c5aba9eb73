package bench

import (
	"strings"
	"testing"
	"time"
)

// The shares figure's note splits the time between commits into turns and
// handoffs: landings come in per writer, out of revision order, and a gap
// over a revision no writer of the figure made counts as neither.
func TestHandoffsSplitTheGapsBetweenCommits(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ls := []landing{
		{writer: 1, revision: 12, at: at(9)},
		{writer: 0, revision: 10, at: at(0)},
		{writer: 1, revision: 13, at: at(10)},
		{writer: 0, revision: 11, at: at(1)},
		{writer: 0, revision: 15, at: at(30)}, // 14 is another process's
		{writer: 1, revision: 16, at: at(34)},
	}
	h := handoffsOf(ls)
	if h.within != 2 || h.withinT != 2*time.Millisecond {
		t.Errorf("within turns: %d gaps, %v in all; want 2, 2ms", h.within, h.withinT)
	}
	if h.handoff != 2 || h.handoffT != 12*time.Millisecond {
		t.Errorf("handoffs: %d, %v in all; want 2, 12ms", h.handoff, h.handoffT)
	}
	if got := h.String(); !strings.Contains(got, "6.00 ms each against 1.00 ms a commit within a turn: 86% of the time") {
		t.Errorf("note %q", got)
	}
	if got := handoffsOf(ls[:1]).String(); got != "0 handoffs between writers in 1 commits" {
		t.Errorf("a lone commit's note: %q", got)
	}
}
