package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
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
		last, median := slices.Max(shared), medianOf(shared)
		name := fmt.Sprintf("%d writers × %d PUTs", w, sharedPuts/w)
		x := row(name+": time", "ms", ms(last), ms(alone[0]), fmt.Sprintf("one writer doing %d", sharedPuts)).atMost(1.15)
		rows = append(rows, x)
		y := row(name+": last writer done", "ms", ms(last), ms(median), "the median writer").atMost(1.2)
		y.Note = fmt.Sprintf("writers done after %s", durations(shared))
		rows = append(rows, y)
	}
	return rows, nil
}

// putsBy runs w writers on one new config, each making n PUTs one after
// another, and returns how long each took from the common start.
func (r *runner) putsBy(ctx context.Context, w, n int) ([]time.Duration, error) {
	defer r.closeAll()
	name := uniqueName("shares")
	configs := make([]*sharedconfig.Config, w)
	for i := range configs {
		var err error
		if configs[i], err = r.open(ctx, name, sharedconfig.Options{}); err != nil {
			return nil, err
		}
	}
	done := make([]time.Duration, w)
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
			done[i] = time.Since(start)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return done, nil
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
