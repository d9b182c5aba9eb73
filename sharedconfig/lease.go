package sharedconfig

import (
	"iter"
	"time"

	"github.com/benbjohnson/immutable"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The mechanics of leases live in this package's lease*.go files; their
// vocabulary (the Lease value, Info, Ended, Lost, the errors, the ttl
// bounds) is package lease, which callers read. The mechanics stay here:
// a lease's updates change a State (its lease table, and the keys attached
// to the lease), which only this package can build. Beyond these files, the
// package knows of leases only that a key may name one (Property.Lease) and
// calls a few seams: the codec asks lease_codec.go for the lease ops and a
// snapshot's leases, a Change asks lease_change.go what an entry ended, and
// Config holds a leaseClient. The files:
//
//	lease.go         a State's leases and the lease updates, as a State applies them
//	lease_codec.go   their wire form
//	lease_client.go  the handle (Config.Leases): what this process holds
//	lease_keeper.go  Leases.Keep, which refreshes and expires in the background
//	lease_clock.go   the server's clock, estimated from the log's times
//	lease_change.go  leases in a config's changes (History, Watch)

// leaseRecord is a lease as a State holds it: the lease, and what only the
// lease updates need to know of it.
type leaseRecord struct {
	lease.Lease
	// watched: the log holds a lease entry (of any lease) from the second
	// half of the time before Deadline, so the log was being written when
	// the lease fell due. A deadline that passed while the log was silent
	// (a server down or restarting, or nobody running) proves nothing about
	// the holder: the first entry after the silence gives the lease a
	// fresh TTL instead of ending it.
	watched bool
}

// overdue: at time t, by the log's clock, the lease is past its deadline.
func (l leaseRecord) overdue(t time.Time) bool { return !t.Before(l.Deadline) }

// heldUnder: holder holds l under registration (0: any).
func (l leaseRecord) heldUnder(holder string, registration uint64) bool {
	return l.Holder == holder && (registration == 0 || registration == l.Registration)
}

// dead: at t the lease is overdue and the log saw it fall due: it can
// only expire now (a refresh does not revive it).
func (l leaseRecord) dead(t time.Time) bool { return l.overdue(t) && l.watched }

// renewed is l with a fresh deadline, a TTL after t.
func (l leaseRecord) renewed(t time.Time) leaseRecord {
	l.Deadline, l.watched = t.Add(l.TTL), false
	return l
}

// The lease updates. They depend on the time the log stored their entry
// (statesync.TimedUpdate), and every one is evidence that the log was
// being written at that time (see leaseRecord.watched).
type (
	// registerLease creates lease Lease held by Holder, or renews it (with
	// a new TTL) if Holder holds it; either way the lease's registration is
	// now this entry's. A lease held by another writer is left alone.
	registerLease struct {
		Lease, Holder string
		TTL           time.Duration
	}
	// refreshLease moves the deadline of a live lease Holder holds under
	// Registration to a TTL from now. Late (the lease is dead), or for
	// another registration, it does nothing. Registration 0 (entries
	// written before registrations had identities) matches any.
	refreshLease struct {
		Lease, Holder string
		Registration  uint64
	}
	// revokeLease ends a lease Holder holds under Registration (0: any),
	// removing its keys.
	revokeLease struct {
		Lease, Holder string
		Registration  uint64
	}
	// expireLease ends a lease whose deadline has passed, removing its keys,
	// in this one entry. Before the deadline it does nothing but witness
	// the time; after a silence in the log (see leaseRecord.watched) it gives the
	// lease a fresh TTL. Any process may write it: the entry's own time
	// decides.
	expireLease struct{ Lease string }
	// putWithLease sets Key to Value attached to Lease, if Lease is live.
	putWithLease struct{ Key, Value, Lease string }
)

var (
	_ statesync.TimedUpdate[State] = registerLease{}
	_ statesync.TimedUpdate[State] = refreshLease{}
	_ statesync.TimedUpdate[State] = revokeLease{}
	_ statesync.TimedUpdate[State] = expireLease{}
	_ statesync.TimedUpdate[State] = putWithLease{}
)

// leaseTable is a State's leases by name.
type leaseTable = *immutable.SortedMap[string, leaseRecord]

// Lease returns the lease named name.
func (s State) Lease(name string) (lease.Lease, bool) {
	r, ok := s.lease(name)
	return r.Lease, ok
}

// Leases yields the leases in name order.
func (s State) Leases() iter.Seq2[string, lease.Lease] {
	return func(yield func(string, lease.Lease) bool) {
		for name, r := range s.leaseRecords() {
			if !yield(name, r.Lease) {
				return
			}
		}
	}
}

func (s State) lease(name string) (leaseRecord, bool) {
	if s.leases == nil {
		return leaseRecord{}, false
	}
	return s.leases.Get(name)
}

func (s State) leaseRecords() iter.Seq2[string, leaseRecord] {
	return func(yield func(string, leaseRecord) bool) {
		if s.leases == nil {
			return
		}
		it := s.leases.Iterator()
		for !it.Done() {
			k, r, _ := it.Next()
			if !yield(k, r) {
				return
			}
		}
	}
}

// leaseKeys returns the keys attached to lease name, in key order.
func (s State) leaseKeys(name string) []string {
	var keys []string
	for k, p := range s.All() {
		if p.Lease == name {
			keys = append(keys, k)
		}
	}
	return keys
}

func (s State) setLease(name string, l leaseRecord) State {
	if s.leases == nil {
		s.leases = immutable.NewSortedMap[string, leaseRecord](stringComparer)
	}
	s.leases = s.leases.Set(name, l)
	return s
}

// endLease removes the lease and its keys.
func (s State) endLease(name string) State {
	var changes []change
	for _, k := range s.leaseKeys(name) {
		changes = append(changes, del(k))
	}
	s = s.with(changes...)
	s.leases = s.leases.Delete(name)
	return s
}

// tick records that the log was written at t: each lease whose deadline
// is at most half a TTL after t is watched.
func (s State) tick(t time.Time) State {
	for name, l := range s.leaseRecords() {
		if !l.watched && t.Before(l.Deadline) && !t.Before(l.Deadline.Add(-l.TTL/2)) {
			l.watched = true
			s = s.setLease(name, l)
		}
	}
	return s
}

// Apply implements statesync.Update, for a log that records no time.
func (u registerLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u registerLease) ApplyAt(s State, rev uint64, t time.Time) State {
	l, exists := s.lease(u.Lease)
	switch {
	case u.TTL <= 0:
	case !exists:
		s = s.setLease(u.Lease, leaseRecord{Lease: lease.Lease{Holder: u.Holder, Registration: rev, TTL: u.TTL}}.renewed(t))
	case l.Holder == u.Holder && !l.dead(t):
		l.TTL, l.Registration = u.TTL, rev
		s = s.setLease(u.Lease, l.renewed(t))
	}
	return s.tick(t)
}

// Apply implements statesync.Update, for a log that records no time.
func (u refreshLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u refreshLease) ApplyAt(s State, _ uint64, t time.Time) State {
	if l, ok := s.lease(u.Lease); ok && l.heldUnder(u.Holder, u.Registration) && !l.dead(t) {
		s = s.setLease(u.Lease, l.renewed(t))
	}
	return s.tick(t)
}

// Apply implements statesync.Update, for a log that records no time.
func (u revokeLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u revokeLease) ApplyAt(s State, _ uint64, t time.Time) State {
	if l, ok := s.lease(u.Lease); ok && l.heldUnder(u.Holder, u.Registration) {
		s = s.endLease(u.Lease)
	}
	return s.tick(t)
}

// Apply implements statesync.Update, for a log that records no time.
func (u expireLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u expireLease) ApplyAt(s State, _ uint64, t time.Time) State {
	l, ok := s.lease(u.Lease)
	switch {
	case !ok || !l.overdue(t):
	case l.watched:
		s = s.endLease(u.Lease)
	default: // the log was silent when it fell due: grace
		s = s.setLease(u.Lease, l.renewed(t))
	}
	return s.tick(t)
}

// Apply implements statesync.Update, for a log that records no time.
func (u putWithLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u putWithLease) ApplyAt(s State, rev uint64, t time.Time) State {
	if l, ok := s.lease(u.Lease); ok && !l.dead(t) {
		s = s.with(set(u.Key, Property{Value: u.Value, Revision: rev, Lease: u.Lease}))
	}
	return s.tick(t)
}
