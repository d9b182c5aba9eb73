package sharedconfig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Keep runs in the background until stop is called: it refreshes the
// leases this process registered and holds (a third of their ttl after the
// last refresh) and writes the expiry of any lease that falls due
// (expireDue), so that leases of processes that died end without anyone
// typing; Close stops it too. warn hears, once per registration, that a
// held lease could not be refreshed for longer than its ttl and may have
// expired, or that it has, or that this process no longer holds it
// (lease.Lost).
func (ls Leases) Keep(warn func(msg string)) (stop func()) {
	c := ls.c
	ctx, cancel := context.WithCancel(context.Background())
	c.life.mu.Lock()
	defer c.life.mu.Unlock()
	if c.life.closed {
		cancel()
		return func() {}
	}
	done := make(chan struct{})
	k := keeper{c: c, warn: warn, lastOK: map[string]time.Time{}, slow: map[string]bool{}, seen: map[string]leaseRecord{}, pulse: &pulse{}}
	pulseDone := k.pulse.run(ctx)
	go func() {
		defer close(done)
		k.loop(ctx)
	}()
	end := func() {
		cancel()
		<-done
		<-pulseDone
	}
	if c.life.keepers == nil {
		c.life.keepers = map[int]func(){}
	}
	id := c.life.next
	c.life.next++
	c.life.keepers[id] = end
	var once sync.Once
	return func() {
		once.Do(func() {
			c.life.mu.Lock()
			delete(c.life.keepers, id)
			c.life.mu.Unlock()
			end()
		})
	}
}

// loop is the keeper: a round every keeperTick until ctx ends.
func (k *keeper) loop(ctx context.Context) {
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
}

// keeperTick is how often the keeper looks at the leases (no I/O unless
// something is due).
const keeperTick = 200 * time.Millisecond

// pulse notices when this process was not running (stopped, suspended):
// a goroutine that does nothing but wake every pulseEvery finds, after such
// a pause, that much more time has passed. It never waits for I/O, so a
// slow refresh is not taken for a pause.
type pulse struct {
	mu          sync.Mutex
	last        time.Time // the last beat
	from, until time.Time // the latest pause
}

const (
	pulseEvery = 100 * time.Millisecond
	// pulsePause: a gap between beats this long is a pause.
	pulsePause = time.Second
)

// run beats until ctx ends; the returned channel closes then.
func (p *pulse) run(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	p.beat()
	go func() {
		defer close(done)
		tick := time.NewTicker(pulseEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				p.beat()
			}
		}
	}()
	return done
}

func (p *pulse) beat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !p.last.IsZero() && now.Sub(p.last) > pulsePause {
		p.from, p.until = p.last, now
	}
	p.last = now
}

// pausedAt: this process was not running at local time t (as far as the
// beats so far tell: a beat first, so a pause just ended counts).
func (p *pulse) pausedAt(t time.Time) bool {
	p.beat()
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.from.IsZero() && p.from.Before(t) && p.until.After(t)
}

// keeperOpTimeout bounds one refresh or expiry.
const keeperOpTimeout = 5 * time.Second

type keeper struct {
	c      *Config
	warn   func(string)
	lastOK map[string]time.Time   // local time of the last good refresh
	slow   map[string]bool        // warned that refreshes fail, since the last good one
	seen   map[string]leaseRecord // the held leases as last seen (round or refresh)
	pulse  *pulse
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
	now := k.c.serverNow()
	k.lapsedIn(now)
	st := k.c.State()
	held, lost := k.c.keptIn(st)
	for _, l := range lost {
		l.Lapsed = l.Lapsed || k.lapsed(k.seen[l.Name], now)
		k.say(l.String())
	}
	clear(k.seen)
	for _, name := range held {
		l, _ := st.lease(name)
		k.seen[name] = l
		if _, ok := k.lastOK[name]; !ok {
			k.lastOK[name] = time.Now()
		}
	}
	for name := range k.lastOK {
		if _, ok := k.seen[name]; !ok {
			delete(k.lastOK, name)
			delete(k.slow, name)
			delete(k.backoff, name)
		}
	}
	for _, name := range held {
		l := k.seen[name]
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
	opCtx, cancel := context.WithTimeout(ctx, keeperOpTimeout)
	defer cancel()
	_, _ = k.c.expireDue(opCtx) // a failure is tried again next round
	k.compactIfDue(ctx)
}

// compactIfDue compacts the config if that is due (refreshes alone fill
// the log too), for no longer than the held leases can wait for their next
// refresh: the keeper refreshes nothing meanwhile. A failure, a compaction
// cut short among them, is tried again next round, and says nothing.
func (k *keeper) compactIfDue(ctx context.Context) {
	c := k.c
	if !c.compactionDue() {
		return
	}
	limit, now := keeperOpTimeout, c.serverNow()
	for _, l := range k.seen {
		limit = min(limit, l.Deadline.Add(-l.TTL*2/3).Sub(now))
	}
	if limit < keeperTick/2 {
		return
	}
	opCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	_ = c.sync.CompactIf(opCtx, snapshotOf, c.compactionDue)
}

// lapsedIn marks the held leases whose deadline, as last seen, passed while
// this process was not running, for whoever reports their end.
func (k *keeper) lapsedIn(now time.Time) {
	for name, l := range k.seen {
		if k.lapsed(l, now) {
			k.c.leases.mark(name, l.Registration, func(kl *keptLease) { kl.lapsed = true })
		}
	}
}

// lapsed: l's deadline passed while this process was not running; now is
// the server's clock.
func (k *keeper) lapsed(l leaseRecord, now time.Time) bool {
	return !l.Deadline.IsZero() && l.overdue(now) && k.pulse.pausedAt(time.Now().Add(l.Deadline.Sub(now)))
}

// refresh refreshes lease name, l in the copy the round began with, and
// warns of a failure that matters. It returns false when ctx ended.
func (k *keeper) refresh(ctx context.Context, name string, l leaseRecord) bool {
	// A refresh that takes longer than the ttl is too late anyway.
	opCtx, cancel := context.WithTimeout(ctx, min(keeperOpTimeout, l.TTL))
	fresh, err := k.c.refreshLease(opCtx, name)
	cancel()
	kept := k.c.leases.get(name)
	switch {
	case err == nil:
		k.lastOK[name], k.slow[name] = time.Now(), false
		k.seen[name] = fresh
		delete(k.backoff, name)
		return true
	case ctx.Err() != nil:
		return false
	}
	k.backOff(name, l)
	switch {
	case kept.registration != l.Registration || kept.told || kept.revoking:
		// Revoked (REVOKE_LEASE), or registered again, since the round
		// began; being revoked; or already reported.
	case errors.Is(err, statesync.ErrReplaced), errors.Is(err, statesync.ErrDeleted):
		// The lease went with the config, whose copy was dropped.
		k.tell(name, l, fmt.Sprintf("Lease '%s' has ended: its config was destroyed (%v)", name, err))
	case purgedUpTo(err) > 0:
		// Or with the config's entries, purged by hand.
		k.tell(name, l, fmt.Sprintf("Lease '%s' has ended: its config was purged by hand up to revision %d; it is no longer held", name, purgedUpTo(err)))
	case lostBy(err):
		// The registration ended: keptIn says so, with why, next round.
	case errors.Is(err, lease.ErrExpired) && (kept.lapsed || k.lapsed(l, k.c.serverNow())):
		k.tell(name, l, lease.Lost{Name: name, Lapsed: true}.String())
	case errors.Is(err, lease.ErrExpired):
		k.tell(name, l, fmt.Sprintf("Lease '%s' has expired: %v", name, err))
	case time.Since(k.lastOK[name]) > l.TTL && !k.slow[name]:
		k.slow[name] = true
		k.say(fmt.Sprintf("Lease '%s' could not be refreshed for more than its ttl of %s: it may have expired (%v)", name, l.TTL, err))
	}
	return true
}

// purgedUpTo is the revision up to which err says the config was purged
// by hand, taking what this process held (statesync.PurgedError, or
// ErrStateGone at the entry after it), or 0.
func purgedUpTo(err error) uint64 {
	var purged *statesync.PurgedError
	var entryErr *statesync.EntryError
	switch {
	case errors.As(err, &purged):
		return purged.UpTo
	case errors.Is(err, statesync.ErrStateGone) && errors.As(err, &entryErr):
		return entryErr.Revision - 1
	}
	return 0
}

// backOff puts off lease name's next refresh after a failed one.
func (k *keeper) backOff(name string, l leaseRecord) {
	if k.backoff == nil {
		k.backoff = map[string]backoff{}
	}
	b := k.backoff[name]
	b.wait = min(max(2*b.wait, keeperTick), l.TTL/3)
	b.next = time.Now().Add(b.wait)
	k.backoff[name] = b
}

// tell says msg of lease name's registration, once.
func (k *keeper) tell(name string, l leaseRecord, msg string) {
	k.c.leases.mark(name, l.Registration, func(kl *keptLease) { kl.told = true })
	k.say(msg)
}

func (k *keeper) say(msg string) {
	if k.warn != nil {
		k.warn(msg)
	}
}
