package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// groupWriters is how many goroutines share one config in the group commit
// figure, and how many configs the anchor runs.
const groupWriters = 16

// groupCommit: groupWriters goroutines updating one key through one config
// (one synchronizer, one connection) for Duration, against as many configs on
// as many connections, each committing its own calls (turns only): calls
// that queue while an append is in flight share the next append. Configs
// that combine commit each other's calls too, across processes: with
// Combining, the note gives ours against those as well.
func (r *runner) groupCommit(ctx context.Context) ([]Row, error) {
	r.progress("group commit", 0, 3)
	shared, appends, err := r.sharedWriters(ctx, groupWriters)
	if err != nil {
		return nil, err
	}
	r.progress("group commit", 1, 3)
	combining := r.o.Combining
	separate, err := r.withoutCombining().contendedOurs(ctx, groupWriters)
	if err != nil {
		return nil, err
	}
	r.progress("group commit", 2, 3)
	var combined contention
	if combining {
		if combined, err = r.contendedOurs(ctx, groupWriters); err != nil {
			return nil, err
		}
	}
	x := row(fmt.Sprintf("group commit, %d goroutines on one connection: commits/s", groupWriters), "commits/s",
		shared.rate(r.o.Duration), separate.rate(r.o.Duration), fmt.Sprintf("%d synchronizers on %d connections, turns only", groupWriters, groupWriters)).atLeast(4)
	if appends > 0 {
		x.Note = fmt.Sprintf("%.1f commits per append; %s (separate: %s)", float64(shared.commits)/float64(appends), shared.fairness(), separate.fairness())
	}
	if combining && combined.commits > 0 {
		x.Note += fmt.Sprintf("; against %d synchronizers that combine, as the shell's do: %.0f commits/s, %.2f×",
			groupWriters, combined.rate(r.o.Duration), shared.rate(r.o.Duration)/combined.rate(r.o.Duration))
	}
	return []Row{x}, nil
}

// withoutCombining is a runner with r's options but Combining off, and
// connections of its own.
func (r *runner) withoutCombining() *runner {
	o := r.o
	o.Combining = false
	return &runner{o: o}
}

// sharedWriters runs w goroutines putting one key through one config and
// returns what they did and how many appends landed.
func (r *runner) sharedWriters(ctx context.Context, w int) (contention, int64, error) {
	defer r.closeAll()
	var appends atomic.Int64
	c, err := r.open(ctx, uniqueName("group"), sharedconfig.Options{Trace: func(a statesync.Attempt) {
		if a.Revision != 0 {
			appends.Add(1)
		}
	}})
	if err != nil {
		return contention{}, 0, err
	}
	got, err := r.runWriters(ctx, w, r.o.Duration, func(i int) (int, error) {
		if _, err := c.Put(ctx, "key", strconv.Itoa(i)); err != nil {
			return 0, err
		}
		return 1, nil
	})
	return got, appends.Load(), err
}
