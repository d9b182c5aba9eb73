package sharedconfig

import (
	"iter"
	"time"

	"github.com/benbjohnson/immutable"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Lease is a named lease: keys attached to it (PutWithLease) live as long
// as its holder keeps refreshing it. Deadlines are in the log's time (the
// time the server stored the entry that set them), never a client's.
type Lease struct {
	Holder   string
	TTL      time.Duration
	Deadline time.Time
}

// Overdue: at time t, by the log's clock, the lease is past its deadline.
func (l Lease) Overdue(t time.Time) bool { return !t.Before(l.Deadline) }

// witnessed: the log holds a lease entry from the second half of l's life
// (the last one, at clock), so it was being written when l fell due. A
// deadline that passed while the log was silent (a server down, a
// restart, or nobody running) proves nothing about the holder: the first
// entry after the silence gives the lease a fresh TTL instead of expiring
// it.
func (l Lease) witnessed(clock time.Time) bool {
	return !clock.Before(l.Deadline.Add(-l.TTL / 2))
}

// dead: at t the lease is overdue and the log saw it fall due: it can
// only expire now (a refresh does not revive it).
func (l Lease) dead(t, clock time.Time) bool { return l.Overdue(t) && l.witnessed(clock) }

// The lease updates. All but RevokeLease depend on the time the log stored
// their entry (statesync.TimedUpdate), and every one of those moves the
// state's lease clock to that time.
type (
	// RegisterLease creates lease Lease held by Holder, or renews it (with
	// a new TTL) if Holder holds it. A lease held by another writer is left
	// alone.
	RegisterLease struct {
		Lease, Holder string
		TTL           time.Duration
	}
	// RefreshLease moves the deadline of a live lease Holder holds to a TTL
	// from now. Late (the lease is dead) it does nothing.
	RefreshLease struct{ Lease, Holder string }
	// RevokeLease ends a lease Holder holds, removing its keys.
	RevokeLease struct{ Lease, Holder string }
	// ExpireLease ends a lease whose deadline has passed, removing its keys,
	// in this one entry. Before the deadline it does nothing but note the
	// time; after a silence in the log (see Lease.witnessed) it gives the
	// lease a fresh TTL. Any process may write it: the entry's own time
	// decides.
	ExpireLease struct{ Lease string }
	// PutWithLease sets Key to Value attached to Lease, if Lease is live.
	PutWithLease struct{ Key, Value, Lease string }
)

var (
	_ statesync.TimedUpdate[State] = RegisterLease{}
	_ statesync.TimedUpdate[State] = RefreshLease{}
	_ statesync.Update[State]      = RevokeLease{}
	_ statesync.TimedUpdate[State] = ExpireLease{}
	_ statesync.TimedUpdate[State] = PutWithLease{}
)

// Lease returns the lease named name.
func (s State) Lease(name string) (Lease, bool) {
	if s.leases == nil {
		return Lease{}, false
	}
	return s.leases.Get(name)
}

// Leases yields the leases in name order.
func (s State) Leases() iter.Seq2[string, Lease] {
	return func(yield func(string, Lease) bool) {
		if s.leases == nil {
			return
		}
		it := s.leases.Iterator()
		for !it.Done() {
			k, l, _ := it.Next()
			if !yield(k, l) {
				return
			}
		}
	}
}

// LeaseKeys returns the keys attached to lease name, in key order.
func (s State) LeaseKeys(name string) []string {
	var keys []string
	for k, p := range s.All() {
		if p.Lease == name {
			keys = append(keys, k)
		}
	}
	return keys
}

// LeaseClock is the log's time at the last lease entry applied.
func (s State) LeaseClock() time.Time { return s.leaseClock }

func (s State) setLease(name string, l Lease) State {
	if s.leases == nil {
		s.leases = immutable.NewSortedMap[string, Lease](stringComparer)
	}
	s.leases = s.leases.Set(name, l)
	return s
}

// endLease removes the lease and its keys.
func (s State) endLease(name string) State {
	for _, k := range s.LeaseKeys(name) {
		s.m = s.m.Delete(k)
	}
	s.leases = s.leases.Delete(name)
	return s
}

// tick moves the lease clock to t (never back: a log's times may step back
// a little across a leader change).
func (s State) tick(t time.Time) State {
	if t.After(s.leaseClock) {
		s.leaseClock = t
	}
	return s
}

// Apply implements statesync.Update, for a log that records no time.
func (u RegisterLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u RegisterLease) ApplyAt(s State, _ uint64, t time.Time) State {
	l, exists := s.Lease(u.Lease)
	switch {
	case u.TTL <= 0:
	case !exists:
		s = s.setLease(u.Lease, Lease{Holder: u.Holder, TTL: u.TTL, Deadline: t.Add(u.TTL)})
	case l.Holder == u.Holder && !l.dead(t, s.leaseClock):
		s = s.setLease(u.Lease, Lease{Holder: u.Holder, TTL: u.TTL, Deadline: t.Add(u.TTL)})
	}
	return s.tick(t)
}

// Apply implements statesync.Update, for a log that records no time.
func (u RefreshLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u RefreshLease) ApplyAt(s State, _ uint64, t time.Time) State {
	if l, ok := s.Lease(u.Lease); ok && l.Holder == u.Holder && !l.dead(t, s.leaseClock) {
		l.Deadline = t.Add(l.TTL)
		s = s.setLease(u.Lease, l)
	}
	return s.tick(t)
}

// Apply implements statesync.Update.
func (u RevokeLease) Apply(s State, _ uint64) State {
	if l, ok := s.Lease(u.Lease); ok && l.Holder == u.Holder {
		s = s.endLease(u.Lease)
	}
	return s
}

// Apply implements statesync.Update, for a log that records no time.
func (u ExpireLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u ExpireLease) ApplyAt(s State, _ uint64, t time.Time) State {
	l, ok := s.Lease(u.Lease)
	switch {
	case !ok || !l.Overdue(t):
	case l.witnessed(s.leaseClock):
		s = s.endLease(u.Lease)
	default: // the log was silent when it fell due: grace
		l.Deadline = t.Add(l.TTL)
		s = s.setLease(u.Lease, l)
	}
	return s.tick(t)
}

// Apply implements statesync.Update, for a log that records no time.
func (u PutWithLease) Apply(s State, rev uint64) State { return u.ApplyAt(s, rev, time.Time{}) }

// ApplyAt implements statesync.TimedUpdate.
func (u PutWithLease) ApplyAt(s State, rev uint64, t time.Time) State {
	if l, ok := s.Lease(u.Lease); ok && !l.dead(t, s.leaseClock) {
		s.m = s.m.Set(u.Key, Property{Value: u.Value, Revision: rev, Lease: u.Lease})
	}
	return s.tick(t)
}
