package sharedconfig

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// KeepLeases runs in the background until stop is called: it refreshes the
// leases this process registered and holds (a third of their ttl after the
// last refresh) and writes the expiry of any lease that falls due
// (ExpireDue), so that leases of processes that died end without anyone
// typing. warn hears, once per lease, that a held lease could not be
// refreshed for longer than its ttl and may have expired, or that it has.
func (c *Config) KeepLeases(warn func(msg string)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		k := keeper{c: c, warn: warn, lastOK: map[string]time.Time{}, warned: map[string]bool{}}
		tick := time.NewTicker(keeperTick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			k.round(ctx)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// keeperTick is how often the keeper looks at the leases (no I/O unless
// something is due).
const keeperTick = 200 * time.Millisecond

// keeperOpTimeout bounds one refresh or expiry.
const keeperOpTimeout = 5 * time.Second

type keeper struct {
	c      *Config
	warn   func(string)
	lastOK map[string]time.Time // local time of the last good refresh
	warned map[string]bool
	// backoff, per lease whose last refresh failed, when to try again: a
	// refresh that lands but cannot be read back (a damaged config) leaves
	// the lease due, and trying every tick would append an entry each time.
	backoff map[string]backoff
}

// backoff is the wait before a lease's next refresh after failed ones.
type backoff struct {
	wait time.Duration // doubles from keeperTick, up to a third of the ttl
	next time.Time
}

func (k *keeper) round(ctx context.Context) {
	now := k.c.ServerNow()
	held := map[string]bool{}
	st := k.c.State()
	for _, name := range k.c.keptIn(st) {
		l, _ := st.Lease(name)
		held[name] = true
		if _, ok := k.lastOK[name]; !ok {
			k.lastOK[name] = time.Now()
		}
		if l.Deadline.Sub(now) > l.TTL*2/3 {
			continue // refreshed less than a third of the ttl ago
		}
		if time.Now().Before(k.backoff[name].next) {
			continue
		}
		if !k.refresh(ctx, name, l) {
			return
		}
	}
	for name := range k.lastOK {
		if !held[name] {
			delete(k.lastOK, name)
			delete(k.warned, name)
			delete(k.backoff, name)
		}
	}
	opCtx, cancel := context.WithTimeout(ctx, keeperOpTimeout)
	defer cancel()
	_, _ = k.c.ExpireDue(opCtx) // a failure is tried again next round
}

// refresh refreshes lease name, l in the copy the round began with, and
// warns of a failure that matters. It returns false when ctx ended.
func (k *keeper) refresh(ctx context.Context, name string, l Lease) bool {
	// A refresh that takes longer than the ttl is too late anyway.
	opCtx, cancel := context.WithTimeout(ctx, min(keeperOpTimeout, l.TTL))
	_, err := k.c.RefreshLease(opCtx, name)
	cancel()
	switch {
	case err == nil:
		k.lastOK[name], k.warned[name] = time.Now(), false
		delete(k.backoff, name)
		return true
	case ctx.Err() != nil:
		return false
	}
	if k.backoff == nil {
		k.backoff = map[string]backoff{}
	}
	b := k.backoff[name]
	b.wait = min(max(2*b.wait, keeperTick), l.TTL/3)
	b.next = time.Now().Add(b.wait)
	k.backoff[name] = b
	switch {
	case !k.c.leases.keeps(name):
		// This process let the lease go (REVOKE_LEASE) since the round
		// began: its end is no news.
	case errors.Is(err, ErrLeaseExpired), errors.Is(err, ErrLeaseEnded), errors.Is(err, ErrUnknownLease), errors.Is(err, ErrLeaseHeld):
		k.once(name, fmt.Sprintf("Lease '%s' has expired: %v", name, err))
	case time.Since(k.lastOK[name]) > l.TTL:
		k.once(name, fmt.Sprintf("Lease '%s' could not be refreshed for more than its ttl of %s: it may have expired (%v)", name, l.TTL, err))
	}
	return true
}

func (k *keeper) once(name, msg string) {
	if !k.warned[name] && k.warn != nil {
		k.warn(msg)
	}
	k.warned[name] = true
}
