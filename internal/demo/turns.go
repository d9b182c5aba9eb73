package demo

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/asciitable"
	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Side is one run of the turns scenario.
type Side struct {
	Turns   bool
	Commits int
	Tries   int
	Writers []WriterStats
}

// WriterStats is what one writer of a side did.
type WriterStats struct {
	Name    string
	Commits int
	Tries   int
	// MostTries is the most tries one of its commits took.
	MostTries int
}

// TriesPerCommit is the side's tries over its commits.
func (s Side) TriesPerCommit() float64 { return ratio(s.Tries, s.Commits) }

// Worst is the writer whose commit took the most tries.
func (s Side) Worst() WriterStats {
	return mostTries(s.Writers, func(w WriterStats) int { return w.MostTries })
}

// ratio is n over d, 0 when d is.
func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// mostTries is the writer of ws with the most tries (the first such), or
// the zero writer when none took any.
func mostTries[W any](ws []W, tries func(W) int) W {
	var worst W
	most := 0
	for _, w := range ws {
		if t := tries(w); t > most {
			worst, most = w, t
		}
	}
	return worst
}

// triesDrawn is how many tries of each side the timeline draws: the
// loops make thousands.
const triesDrawn = 24

// turns: writers writing back to back, without and with turns.
func turns(ctx context.Context, r *run) error {
	d := r.runLength()
	r.say("Scenario turns: %d writers each PUT the same key back to back for %s, first without turns, then with them.", r.o.Writers, d)
	r.say("Without turns, the writer that just won is already current and tends to win again; the others keep losing.")
	r.say("With turns, a writer that lost twice in a row says it waits (outside the stream), and the others hold back for it.")
	for _, on := range []bool{false, true} {
		title := "without turns (the synchronizer is given a log that cannot carry their words)"
		if on {
			title = "with turns (as every command runs)"
		}
		if err := r.nextStep(title); err != nil {
			return err
		}
		side, err := r.runSide(ctx, on, d)
		if err != nil {
			return err
		}
		r.res.Sides = append(r.res.Sides, side)
		r.saySide(side)
	}
	if err := r.nextStep("side by side"); err != nil {
		return err
	}
	r.compareSides()
	return nil
}

// runSide runs the writers in loops for d on a fresh config.
func (r *run) runSide(ctx context.Context, on bool, d time.Duration) (Side, error) {
	label, name := "without turns", "turns-off"
	if on {
		label, name = "with turns", "turns-on"
	}
	config := r.newConfig(name)
	ws := make([]*writer, r.o.Writers)
	for i := range ws {
		w, err := r.openLane(ctx, config, namesOfWriters[i], i, openOptions{noTurns: !on, side: label})
		if err != nil {
			return Side{}, err
		}
		ws[i] = w
	}
	from := len(r.rec.tries())
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, w := range ws {
		wg.Go(func() { errs[i] = w.do("PUT n", loopPuts(r.ctx, w.name, end, r.o.Timeout)) })
	}
	wg.Wait()
	for _, w := range ws {
		w.stop()
	}
	for _, err := range errs {
		if err != nil {
			return Side{}, err
		}
	}
	all := r.rec.tries()[from:]
	r.drawn = append(r.drawn, all[:min(triesDrawn, len(all))]...)
	return sideOf(on, all, ws), nil
}

// loopPuts puts the key n until end, each put right after the last.
func loopPuts(runCtx context.Context, name string, end time.Time, timeout time.Duration) func(c *sharedconfig.Config) error {
	return func(c *sharedconfig.Config) error {
		for i := 0; time.Now().Before(end); i++ {
			ctx, cancel := context.WithTimeout(runCtx, timeout)
			_, err := c.Put(ctx, "n", name+"-"+strconv.Itoa(i))
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
}

func sideOf(on bool, tries []timeline.Try, ws []*writer) Side {
	s := Side{Turns: on}
	for _, w := range ws {
		st := WriterStats{Name: w.name}
		for _, tr := range tries {
			if tr.Lane != w.lane {
				continue
			}
			st.Tries++
			if tr.Outcome == timeline.Committed {
				st.Commits++
				st.MostTries = max(st.MostTries, tr.N)
			}
		}
		s.Writers = append(s.Writers, st)
		s.Commits += st.Commits
		s.Tries += st.Tries
	}
	return s
}

func (r *run) saySide(s Side) {
	r.say("  %d writers made %d commits in %d tries: %.2f tries per commit.", len(s.Writers), s.Commits, s.Tries, s.TriesPerCommit())
	w := s.Worst()
	r.say("  The worst writer, %s, needed up to %d tries for one commit (it made %d commits).", w.Name, w.MostTries, w.Commits)
}

func (r *run) compareSides() {
	off, on := r.res.Sides[0], r.res.Sides[1]
	rows := [][]string{
		{"commits", strconv.Itoa(off.Commits), strconv.Itoa(on.Commits)},
		{"tries per commit", fmt.Sprintf("%.2f", off.TriesPerCommit()), fmt.Sprintf("%.2f", on.TriesPerCommit())},
		{"worst writer: most tries for one commit", worstText(off), worstText(on)},
	}
	for i := range off.Writers {
		rows = append(rows, []string{off.Writers[i].Name + ": commits", strconv.Itoa(off.Writers[i].Commits), strconv.Itoa(on.Writers[i].Commits)})
	}
	asciitable.Render(r.o.Out, []string{"", "without turns", "with turns"}, rows)
	r.say("The timeline below draws the first %d tries of each run.", triesDrawn)
}

func worstText(s Side) string {
	w := s.Worst()
	return fmt.Sprintf("%s: %d", w.Name, w.MostTries)
}
