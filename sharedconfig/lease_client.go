package sharedconfig

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// leaseClient is what a Config knows about leases beyond the state: who it
// is, and how the server's clock stands against the local one.
type leaseClient struct {
	holder string

	mu     sync.Mutex
	server serverClock
	clock  func() time.Time // tests: the server's clock itself
	// kept: the registrations this process made and has not seen end,
	// which it keeps alive and revokes on a clean exit. A lease its holder
	// holds under another registration is another process's: a short-lived
	// process with the same holder must neither revoke it
	// on exit nor keep it alive after its registrant died, and a process
	// whose registration ended must not touch the next one.
	kept map[string]keptLease
	// drops counts the copies dropped for a config destroyed (dropAll),
	// so that Register knows whether its registration is of the config
	// as it stands.
	drops uint64
}

// keptLease is a registration this process made.
type keptLease struct {
	registration uint64
	// lapsed: its deadline passed while this process was not running.
	lapsed bool
	// told: its end was reported already.
	told bool
	// revoking: this process is revoking it. It is kept alive until the
	// revocation lands (which may wait for its turn longer than the ttl
	// left), and its end is no news.
	revoking bool
	// destroyed: it went with its config, destroyed under this process.
	// Its revision may name another registration in the config created
	// again (a process of the same holder registering the lease there),
	// so it names none for this process any more: keptIn drops it.
	destroyed bool
}

// keep records that this process keeps lease name under registration,
// made while lc.drops was drops.
func (lc *leaseClient) keep(name string, registration, drops uint64) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.kept == nil {
		lc.kept = map[string]keptLease{}
	}
	lc.kept[name] = keptLease{registration: registration, destroyed: drops != lc.drops}
}

// dropCount is lc.drops, for keep.
func (lc *leaseClient) dropCount() uint64 {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.drops
}

// dropAll marks every registration this process keeps as gone with its
// config, whose copy was just dropped (statesync.WithDropped).
func (lc *leaseClient) dropAll() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.drops++
	for name, k := range lc.kept {
		k.destroyed = true
		lc.kept[name] = k
	}
}

// revoke marks lease name as being revoked, and returns what this process
// keeps of it (no registration: none).
func (lc *leaseClient) revoke(name string) keptLease {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	k, ok := lc.kept[name]
	if !ok || k.destroyed {
		return keptLease{}
	}
	k.revoking = true
	lc.kept[name] = k
	return k
}

// forget forgets lease name, if this process keeps it under registration
// reg still.
func (lc *leaseClient) forget(name string, reg uint64) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if k, ok := lc.kept[name]; ok && k.registration == reg {
		delete(lc.kept, name)
	}
}

// get is what this process keeps of lease name (no registration: none).
func (lc *leaseClient) get(name string) keptLease {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.kept[name]
}

// registration is the registration of lease name this process keeps, or 0.
func (lc *leaseClient) registration(name string) uint64 {
	if k := lc.get(name); !k.destroyed {
		return k.registration
	}
	return 0
}

// mark sets what is known of lease name's registration reg, if this
// process keeps it still.
func (lc *leaseClient) mark(name string, reg uint64, set func(*keptLease)) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if k, ok := lc.kept[name]; ok && k.registration == reg {
		set(&k)
		lc.kept[name] = k
	}
}

// keptIn returns the leases this process keeps that st shows held under
// its registration, and forgets the others, which it returns as lost
// unless their end was reported already: a lease gone, or held under
// another registration, has ended for this process.
func (c *Config) keptIn(st State) (held []string, lost []lease.Lost) {
	lc := &c.leases
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for name, k := range lc.kept {
		l, ok := st.lease(name)
		if ok && !k.destroyed && l.heldUnder(lc.holder, k.registration) {
			held = append(held, name)
			continue
		}
		delete(lc.kept, name)
		if !k.told && !k.revoking {
			lost = append(lost, lease.Lost{Name: name, Holder: lc.holder, Lapsed: k.lapsed, Destroyed: k.destroyed, Now: present(l, ok)})
		}
	}
	slices.Sort(held)
	slices.SortFunc(lost, func(a, b lease.Lost) int { return strings.Compare(a.Name, b.Name) })
	return held, lost
}

func newLeaseClient(holder string) leaseClient {
	if holder == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		holder = "holder-" + hex.EncodeToString(b)
	}
	return leaseClient{holder: holder}
}

// Leases is a config's lease side, c.Leases(): registering, refreshing and
// revoking this process's leases, keeping them alive, and listing them.
type Leases struct{ c *Config }

// Leases returns the config's lease handle.
func (c *Config) Leases() Leases { return Leases{c} }

// Holder names this process as a lease holder (Options.Holder).
func (ls Leases) Holder() string { return ls.c.leases.holder }

// Now estimates the server's clock from the times the log stored on
// the entries this process read (serverClock); the local clock only
// measures the time since. It decides only when this process asks the log
// for something (a refresh, an expiry); whether a lease expired is decided
// by the time the log stores on the expiry entry.
func (ls Leases) Now() time.Time { return ls.c.serverNow() }

func (c *Config) serverNow() time.Time {
	stored, seen := c.sync.LastLogTime()
	c.leases.mu.Lock()
	defer c.leases.mu.Unlock()
	if c.leases.clock != nil {
		return c.leases.clock()
	}
	now := time.Now()
	c.leases.server.observe(logTime{Stored: stored, Seen: seen}, now)
	return c.leases.server.estimate(now)
}

func checkLeaseName(name string) error {
	if name == "" {
		return errors.New("a lease needs a name")
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%q: %w", name, ErrNotUTF8)
	}
	return nil
}

// List lists the leases of the local copy.
func (ls Leases) List() []lease.Info {
	c := ls.c
	st := c.State()
	var out []lease.Info
	for name, l := range st.leaseRecords() {
		reg := c.leases.registration(name)
		out = append(out, lease.Info{Name: name, Lease: l.Lease, Keys: st.leaseKeys(name), Mine: reg != 0 && l.heldUnder(c.leases.holder, reg)})
	}
	return out
}

// Register creates lease name held by this process with the given
// ttl, or renews it (with this ttl) if this process holds it already.
// It returns lease.ErrHeld if another writer holds it.
func (ls Leases) Register(ctx context.Context, name string, ttl time.Duration) (renewed bool, err error) {
	c := ls.c
	if err := checkLeaseName(name); err != nil {
		return false, err
	}
	if err := lease.CheckTTL(ttl); err != nil {
		return false, err
	}
	type found struct {
		err     error
		existed bool
		before  uint64 // the registration it replaces
	}
	drops := c.leases.dropCount()
	f, after, err := updateAt(ctx, c, func(s State) (updates, found) {
		l, ok := s.lease(name)
		if ok && l.Holder != c.leases.holder {
			return nil, found{err: fmt.Errorf("%w (%s)", lease.ErrHeld, l.Holder)}
		}
		return updates{registerLease{name, c.leases.holder, ttl}}, found{existed: ok, before: l.Registration}
	}, nil, c.leases.holder)
	if err == nil {
		err = f.err
	}
	if err != nil {
		return false, err
	}
	l, ok := after.lease(name)
	if !ok || l.Holder != c.leases.holder || (f.existed && l.Registration == f.before) {
		return false, fmt.Errorf("lease '%s': %w", name, lease.ErrExpired)
	}
	c.leases.keep(name, l.Registration, drops)
	return f.existed, nil
}

// Refresh moves the deadline of lease name, which this process holds,
// to its ttl from now by the server's clock, and returns the lease.
//
// When the local copy says this process holds the lease, the refresh is
// appended unconditionally (statesync's UpdateUnconditionally): it decides
// nothing from the state it is written on, since applying it renews only a
// live lease its holder holds, so it need not wait for a copy that is
// current. It never loses a race, nor waits for the turns of writers who
// lost theirs: refreshes cost those writers little (README, "Leases").
// Otherwise the conditional path gives the answer of the latest state.
// Then it compacts the config if that is due.
func (ls Leases) Refresh(ctx context.Context, name string) (lease.Lease, error) {
	c := ls.c
	l, err := c.refreshLease(ctx, name)
	if err == nil {
		c.compactIfDue(ctx)
	}
	return l.Lease, err
}

// refreshLease is Refresh without the compaction, for the keeper,
// whose next refresh must not wait for one.
func (c *Config) refreshLease(ctx context.Context, name string) (leaseRecord, error) {
	reg := c.leases.registration(name)
	if l, err := c.held(c.State(), name, reg); err == nil && utf8.ValidString(name) {
		after, err := c.sync.UpdateUnconditionally(ctx, refreshLease{name, c.leases.holder, reg})
		if err != nil {
			return leaseRecord{}, err
		}
		return c.refreshed(after, name, reg, l.Deadline)
	}
	type found struct {
		err    error
		before time.Time
	}
	f, after, err := updateAt(ctx, c, func(s State) (updates, found) {
		l, err := c.held(s, name, reg)
		if err != nil {
			return nil, found{err: err}
		}
		return updates{refreshLease{name, c.leases.holder, reg}}, found{before: l.Deadline}
	}, nil, name)
	if err == nil {
		err = f.err
	}
	if err != nil {
		return leaseRecord{}, err
	}
	return c.refreshed(after, name, reg, f.before)
}

// refreshed judges a refresh of lease name by the state just after its
// entry: it renewed the lease only if the lease is still this process's,
// with a deadline other than before, the one it had, and not watched. A
// lease just renewed is never watched (its deadline is a whole ttl after
// the entry), and one the refresh found dead stays watched: that catches a
// late refresh from a copy that missed a change of deadline (a refresh by
// another process with the same holder, a grace after a silence), where
// the deadline differs from before though the refresh did nothing.
// A lease gone, now another writer's, or held under another registration
// than reg, is reported as such.
func (c *Config) refreshed(after State, name string, reg uint64, before time.Time) (leaseRecord, error) {
	l, ok := after.lease(name)
	switch {
	case !ok:
		return l, fmt.Errorf("lease '%s': %w", name, lease.ErrEnded)
	case l.Holder != c.leases.holder:
		return l, fmt.Errorf("%w (%s)", lease.ErrHeld, l.Holder)
	case l.Registration != reg:
		return l, fmt.Errorf("lease '%s': %w", name, lease.ErrNotMine)
	case l.watched || l.Deadline.Equal(before):
		return l, fmt.Errorf("lease '%s': %w", name, lease.ErrExpired)
	}
	return l, nil
}

// Revoke ends lease name, which this process holds, and removes its
// keys, which it returns.
func (ls Leases) Revoke(ctx context.Context, name string) (keys []string, err error) {
	c := ls.c
	kept := c.leases.revoke(name)
	defer func() {
		if err == nil || lostBy(err) {
			c.leases.forget(name, kept.registration)
			return
		}
		c.leases.mark(name, kept.registration, func(k *keptLease) { k.revoking = false })
	}()
	type found struct {
		err  error
		keys []string
	}
	f, err := update(ctx, c, func(s State) (updates, found) {
		_, err := c.held(s, name, kept.registration)
		if err != nil {
			return nil, found{err: err}
		}
		return updates{revokeLease{name, c.leases.holder, kept.registration}}, found{keys: s.leaseKeys(name)}
	}, name)
	if err == nil {
		err = f.err
	}
	return f.keys, err
}

// RevokeHeld revokes the leases this process registered and still holds,
// as a clean exit does, without waiting for other writers' turns; those
// its holder holds under another process's registration are left alone. It returns the registrations it found lost
// whose end was not reported yet.
func (ls Leases) RevokeHeld(ctx context.Context) ([]lease.Lost, error) {
	c := ls.c
	// A quitting process has a second or so to end its leases: waiting
	// for other writers' turns (or forged words) would leave its keys for
	// the rest of the ttl. The revocation stays conditional; it only does
	// not hold back.
	ctx = turns.Without(ctx)
	st, now := c.State(), c.serverNow()
	held, lost := c.keptIn(st)
	var errs []error
	for _, name := range held {
		k := c.leases.get(name)
		_, err := ls.Revoke(ctx, name)
		switch {
		case lostBy(err):
			// Ended before the revocation caught up with the log.
			l, ok := c.State().lease(name)
			gone := lease.Lost{Name: name, Holder: c.leases.holder, Lapsed: k.lapsed, Now: present(l, ok)}
			if !k.told && !endedRevoking(st, now, gone) {
				lost = append(lost, gone)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("revoking lease '%s': %w", name, err))
		}
	}
	return lost, errors.Join(errs...)
}

// endedRevoking: lost, live in st at now (the copy and the server's clock
// RevokeHeld began with), ended while RevokeHeld revoked it. Before its
// deadline only this process ends its registration (an expiry waits for
// the deadline; a revocation names the registration), so it expired after
// this process stopped keeping it alive in order to end it: a revocation
// can wait for its turn among many writers longer than the ttl left. Its
// end is the one the revocation was for. Registered again by another
// process of this writer is news: it lives on, with its keys.
func endedRevoking(st State, now time.Time, lost lease.Lost) bool {
	l, ok := st.lease(lost.Name)
	return ok && !l.overdue(now) && !(lost.Now != nil && lost.Now.Holder == lost.Holder)
}

// present is the lease of a record a State may hold (ok), for Lost.Now.
func present(r leaseRecord, ok bool) *lease.Lease {
	if !ok {
		return nil
	}
	return &r.Lease
}

// lostBy: err says that this process's registration had ended.
func lostBy(err error) bool {
	return errors.Is(err, lease.ErrUnknown) || errors.Is(err, lease.ErrNotMine) || errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrEnded)
}

// held is lease name in s, if this process holds it under registration
// reg, the one it made (0: none).
func (c *Config) held(s State, name string, reg uint64) (leaseRecord, error) {
	l, ok := s.lease(name)
	switch {
	case !ok:
		return l, fmt.Errorf("'%s': %w", name, lease.ErrUnknown)
	case l.Holder != c.leases.holder:
		return l, fmt.Errorf("%w (%s)", lease.ErrHeld, l.Holder)
	case reg == 0 || l.Registration != reg:
		return l, fmt.Errorf("'%s': %w", name, lease.ErrNotMine)
	}
	return l, nil
}

// leaseHeld is the check a write WithLease makes on the state it decides
// on: that this process holds lease, by the registration it knows.
func (c *Config) leaseHeld(lease string) func(State) error {
	reg := c.leases.registration(lease)
	return func(s State) error {
		_, err := c.held(s, lease, reg)
		return err
	}
}

// putUnder is the update that sets key to value attached to lease: it
// lands only while the lease is live.
func putUnder(key, value, lease string) statesync.Update[State] {
	return putWithLease{key, value, lease}
}

// putLanded judges a put of key = value under lease by the state just after
// its entry (later entries, another writer's put or this process's own
// keeper, do not count): the lease had ended if the key is not as put.
func putLanded(after State, key, value, leaseName string) error {
	if p, ok := after.Lookup(key); !ok || p.Lease != leaseName || p.Value != value {
		return fmt.Errorf("lease '%s': %w", leaseName, lease.ErrExpired)
	}
	return nil
}

// witnessLead is how long before a lease's deadline, by serverNow, a
// witness is written. serverNow is a lower bound that lags the server's
// clock by as much as the age of the newest entry read when this process
// opened the config (up to a third of a ttl while the holder refreshes),
// so the witness goes soon after the window that counts opens (the lease's
// last half): half a keeper round in, which leaves a live holder's refresh
// (a third of a ttl in, give or take a round) the time to land first;
// never later than a quarter of the ttl before the deadline.
func witnessLead(ttl time.Duration) time.Duration {
	return max(ttl/4, ttl/2-keeperTick/2)
}

// expireDue writes an expiry for every lease that looks past its deadline
// by serverNow, and a witness (an expiry that is not yet due, which only
// records the log's time) for a lease about to fall due while the log has
// been quiet, so that its expiry will be judged rather than forgiven (see
// leaseRecord.watched). The log's time on each entry decides; this process's
// clock only picks the moment to ask. It returns the leases that ended.
func (c *Config) expireDue(ctx context.Context) ([]string, error) {
	now := c.serverNow()
	// dueNow: l looks overdue, or about to fall due unwatched.
	dueNow := func(l leaseRecord) bool {
		return l.overdue(now) || (!l.watched && now.After(l.Deadline.Add(-witnessLead(l.TTL))))
	}
	var due []string
	st := c.State()
	for name, l := range st.leaseRecords() {
		if dueNow(l) {
			due = append(due, name)
		}
	}
	var ended []string
	var errs []error
	// The entry's time decides an expiry or a witness: it waits for no
	// writer's turn, or it would land late, where a grace renews the lease.
	ctx = turns.Without(ctx)
	for _, name := range due {
		gone, err := update(ctx, c, func(s State) (updates, bool) {
			if l, ok := s.lease(name); ok && dueNow(l) {
				return updates{expireLease{name}}, true
			}
			return nil, false
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, still := c.State().lease(name); gone && !still {
			ended = append(ended, name)
		}
	}
	return ended, errors.Join(errs...)
}
