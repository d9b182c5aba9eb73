package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// leasesKept is how many leases the leases figure keeps alive, and
// leaseTTL their ttl: each is refreshed every third of it.
const (
	leasesKept = 10
	leaseTTL   = 3 * time.Second
)

// leases: contended PUTs by the most writers of the contended figures,
// while leasesKept other processes keep a lease each alive (a refresh entry
// per lease every leaseTTL/3), against the same writers beside the same
// processes holding no lease, each reading the log as often as a refresh
// makes it (every process keeps a copy of the config and reads every entry,
// and on two cores those reads cost the writers more than the refresh
// entries do). Refreshes move the stream's last sequence, so each can cost
// a writer a try; the target is that they cost little.
func (r *runner) leases(ctx context.Context) ([]Row, error) {
	if len(r.o.Writers) == 0 {
		return nil, nil
	}
	defer r.closeAll()
	w := r.o.Writers[len(r.o.Writers)-1]
	phase := fmt.Sprintf("contended, %d writers, %d leases kept alive", w, leasesKept)
	r.progress(phase, 0, 1)
	withWrite, stopWith, err := r.besideProcesses(ctx, w, true)
	defer stopWith()
	if err != nil {
		return nil, err
	}
	noneWrite, stopNone, err := r.besideProcesses(ctx, w, false)
	defer stopNone()
	if err != nil {
		return nil, err
	}
	// The two alternate, as the contended figures do, so that a drift in
	// the machine's speed falls on both.
	none, with, err := r.alternate(ctx, w, noneWrite, withWrite)
	if err != nil {
		return nil, err
	}
	x := row(phase+": commits/s", "commits/s", with.rate(r.o.Duration), none.rate(r.o.Duration), "no leases").atLeast(0.9)
	x.Note = fmt.Sprintf("tries per commit %.2f (without leases %.2f); refreshes every %s per lease; without leases the %d processes read the log as often", with.perCommit(), none.perCommit(), leaseTTL/3, leasesKept)
	return []Row{x}, nil
}

// besideProcesses opens a config for w contended writers beside leasesKept
// other processes that keep a lease each alive, or, without leases, read
// the log as often as a refresh would make them, and returns the writers'
// write and what stops the other processes.
func (r *runner) besideProcesses(ctx context.Context, w int, leases bool) (write func(i int) (int, error), stop func(), err error) {
	name := uniqueName("leases")
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for i := range leasesKept {
		holder, err := r.open(ctx, name, sharedconfig.Options{Holder: fmt.Sprintf("holder-%d", i)})
		if err != nil {
			return nil, stop, err
		}
		if leases {
			s, err := keepALease(ctx, holder, i)
			if err != nil {
				return nil, stop, err
			}
			stops = append(stops, s)
		} else {
			stops = append(stops, readEvery(holder, leaseTTL/3))
		}
	}
	write, err = r.openPutters(ctx, name, w)
	return write, stop, err
}

// keepALease registers the i'th lease, puts a key under it, and keeps it
// alive until stop.
func keepALease(ctx context.Context, holder *sharedconfig.Config, i int) (stop func(), err error) {
	lease := fmt.Sprintf("lease-%d", i)
	if _, err := holder.Leases().Register(ctx, lease, leaseTTL); err != nil {
		return nil, err
	}
	if _, err := holder.Put(ctx, "/members/"+strconv.Itoa(i), "up", sharedconfig.WithLease(lease)); err != nil {
		return nil, err
	}
	return holder.Leases().Keep(nil), nil
}

// readEvery brings c's copy up to date every period until stop.
func readEvery(c *sharedconfig.Config, period time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = c.Refresh(ctx) // a failed read only makes the baseline cheaper
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
