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
// per lease every leaseTTL/3), against the same writers with no leases.
// Refreshes move the stream's last sequence, so each can cost a writer a
// try; the target is that they cost little.
func (r *runner) leases(ctx context.Context) ([]Row, error) {
	if len(r.o.Writers) == 0 {
		return nil, nil
	}
	w := r.o.Writers[len(r.o.Writers)-1]
	phase := fmt.Sprintf("contended, %d writers, %d leases kept alive", w, leasesKept)
	r.progress(phase, 0, 2)
	none, err := r.contendedOurs(ctx, w)
	if err != nil {
		return nil, err
	}
	r.progress(phase, 1, 2)
	with, err := r.contendedWithLeases(ctx, w)
	if err != nil {
		return nil, err
	}
	x := row(phase+": commits/s", "commits/s", with.rate(r.o.Duration), none.rate(r.o.Duration), "no leases").atLeast(0.9)
	x.Note = fmt.Sprintf("tries per commit %.2f (without leases %.2f); refreshes every %s per lease", with.perCommit(), none.perCommit(), leaseTTL/3)
	return []Row{x}, nil
}

func (r *runner) contendedWithLeases(ctx context.Context, w int) (contention, error) {
	defer r.closeAll()
	name := uniqueName("leases")
	for i := range leasesKept {
		holder, err := r.open(ctx, name, sharedconfig.Options{Holder: fmt.Sprintf("holder-%d", i)})
		if err != nil {
			return contention{}, err
		}
		lease := fmt.Sprintf("lease-%d", i)
		if _, err := holder.RegisterLease(ctx, lease, leaseTTL); err != nil {
			return contention{}, err
		}
		if _, _, err := holder.PutWithLease(ctx, "/members/"+strconv.Itoa(i), "up", lease); err != nil {
			return contention{}, err
		}
		stop := holder.KeepLeases(nil)
		defer stop()
	}
	return r.putters(ctx, name, w)
}
