package sharedconfig

import (
	"context"
	"time"
)

// SetServerClock makes c read the server's clock from now, as tests of
// leases on a memlog.Log with a fake clock need.
func SetServerClock(c *Config, now func() time.Time) {
	c.leases.mu.Lock()
	defer c.leases.mu.Unlock()
	c.leases.clock = now
}

// ExpireNow writes an expiry of lease name, due or not, if c's copy (made
// current) has the lease, and reports whether the lease ended. The entry's
// time decides what it does, as for ExpireDue's, which only picks the
// moment by c's guess of the server's clock; the linearizability check
// writes expiries at random moments instead.
func ExpireNow(ctx context.Context, c *Config, name string) (ended bool, err error) {
	wrote, err := update(ctx, c, func(s State) (updates, bool) {
		if _, ok := s.Lease(name); !ok {
			return nil, false
		}
		return updates{expireLease{name}}, true
	})
	if err != nil || !wrote {
		return false, err
	}
	_, still := c.State().Lease(name)
	return !still, nil
}

// ExpireDue is what c's lease keeper does each round: the external tests
// call it at the moments they choose.
func ExpireDue(ctx context.Context, c *Config) ([]string, error) { return c.expireDue(ctx) }

// EntriesSinceCompaction is the history a new reader of c would replay.
func EntriesSinceCompaction(c *Config) uint64 { return c.entriesSinceCompaction() }
