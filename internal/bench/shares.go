package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// shares: W writers, each on its own connection, each putting n = Ops/5/W
// times one key of one config (1,600 PUTs in all at the default sizes),
// against one writer making all W·n alone: how much longer the
// work takes when shared, and how long the last writer finishes after the
// median one.
func (r *runner) shares(ctx context.Context) ([]Row, error) {
	var rows []Row
	for _, w := range r.o.Writers {
		sharedPuts := max(w, r.o.Ops/5/w*w)
		if w < 2 {
			continue
		}
		r.progress(fmt.Sprintf("shares, %d writers", w), 0, 1)
		alone, err := r.putsBy(ctx, 1, sharedPuts)
		if err != nil {
			return rows, err
		}
		shared, err := r.putsBy(ctx, w, sharedPuts/w)
		if err != nil {
			return rows, err
		}
		done := doneTimes(shared)
		last, median := slices.Max(done), medianOf(done)
		name := fmt.Sprintf("%d writers × %d PUTs", w, sharedPuts/w)
		x := row(name+": time", "ms", ms(last), ms(alone[0].done), fmt.Sprintf("one writer doing %d", sharedPuts)).atMost(1.15)
		x.Note = handoffsOf(landingsOf(shared)).String()
		rows = append(rows, x)
		y := row(name+": last writer done", "ms", ms(last), ms(median), "the median writer").atMost(1.2)
		y.Note = fmt.Sprintf("writers done after %s", durations(done))
		rows = append(rows, y)
	}
	return rows, nil
}

// writerRun is one writer's part of putsBy: when it was done, from the
// common start, and where and when each of its entries landed.
type writerRun struct {
	done     time.Duration
	landings []landing
}

// putsBy runs w writers on one new config, each making n PUTs one after
// another, and returns each one's run.
func (r *runner) putsBy(ctx context.Context, w, n int) ([]writerRun, error) {
	defer r.closeAll()
	name := uniqueName("shares")
	configs := make([]*sharedconfig.Config, w)
	runs := make([]writerRun, w)
	var mu sync.Mutex // guards runs' landings
	for i := range configs {
		trace := func(a statesync.Attempt) {
			if a.Revision != 0 { // landed
				mu.Lock()
				runs[i].landings = append(runs[i].landings, landing{writer: i, revision: a.Revision, at: time.Now()})
				mu.Unlock()
			}
		}
		var err error
		if configs[i], err = r.open(ctx, name, sharedconfig.Options{Trace: trace}); err != nil {
			return nil, err
		}
	}
	errs := make([]error, w)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range configs {
		wg.Go(func() {
			for j := range n {
				if _, err := c.Put(ctx, "key", fmt.Sprint(j)); err != nil {
					errs[i] = err
					return
				}
			}
			runs[i].done = time.Since(start)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, nil
}

func landingsOf(runs []writerRun) []landing {
	var all []landing
	for _, r := range runs {
		all = append(all, r.landings...)
	}
	return all
}

func doneTimes(runs []writerRun) []time.Duration {
	ds := make([]time.Duration, len(runs))
	for i, r := range runs {
		ds[i] = r.done
	}
	return ds
}

// landing is one commit of one writer: its entry's revision, and when its
// writer heard that it landed.
type landing struct {
	writer   int
	revision uint64
	at       time.Time
}

// handoffs is where the time between commits went: between two commits of
// one writer (within its turn), or from one writer's commit to another's
// (a handoff: the "done" word, the next writer's wake-up, catch-up and
// try). Issue 22's shares figure is bound by the second.
type handoffs struct {
	within, handoff   int
	withinT, handoffT time.Duration
	commits           int
}

// handoffsOf sorts the landings by revision and sums the gaps between
// consecutive ones. A gap over revisions no landing has (another process's
// entries) counts as neither.
func handoffsOf(ls []landing) handoffs {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b landing) int { return cmpUint(a.revision, b.revision) })
	h := handoffs{commits: len(ls)}
	for k := 1; k < len(ls); k++ {
		prev, cur := ls[k-1], ls[k]
		if cur.revision != prev.revision+1 {
			continue
		}
		gap := max(cur.at.Sub(prev.at), 0)
		if cur.writer == prev.writer {
			h.within, h.withinT = h.within+1, h.withinT+gap
		} else {
			h.handoff, h.handoffT = h.handoff+1, h.handoffT+gap
		}
	}
	return h
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (h handoffs) String() string {
	if h.handoff == 0 || h.within == 0 {
		return fmt.Sprintf("%d handoffs between writers in %d commits", h.handoff, h.commits)
	}
	share := float64(h.handoffT) / float64(h.handoffT+h.withinT)
	return fmt.Sprintf("%d handoffs between writers in %d commits (%.1f commits a turn), %.2f ms each against %.2f ms a commit within a turn: %.0f%% of the time",
		h.handoff, h.commits, float64(h.commits)/float64(h.handoff+1), ms(h.handoffT)/float64(h.handoff), ms(h.withinT)/float64(h.within), 100*share)
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func durations(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	out := ""
	for i, d := range s {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%.0f", ms(d))
	}
	return out + " ms"
}
