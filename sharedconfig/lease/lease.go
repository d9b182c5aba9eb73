// Package lease is the vocabulary of sharedconfig's leases: what a lease
// is (Lease), how a process reads them (Info) and hears of their end
// (Ended, Lost), why a lease operation did nothing (the errors), and what
// a ttl may be (ParseTTL, CheckTTL).
//
// It is apart from package sharedconfig, as etcd's clientv3 keeps its lease
// vocabulary apart from its KV, so that a reader of the config's API meets
// leases in one place, under one name (lease.Info, lease.ErrExpired). The
// mechanics stay in sharedconfig (sharedconfig/lease*.go): a lease's
// updates change a config's State, which only that package can build, so
// this package knows nothing of sharedconfig, and sharedconfig imports it.
package lease

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Lease is a named lease: keys attached to it live as long as its holder
// keeps refreshing it. Deadlines are in the log's time (the time the
// server stored the entry that set them), never a client's.
type Lease struct {
	Holder string
	// Registration is the lease's identity: the revision of the entry that
	// registered it (renewing by registering again makes a new one). Only
	// a refresh or revocation naming it touches it, so a process that lost
	// its registration (its lease expired and was registered again, by
	// another process with the same holder, say) cannot touch the later
	// one. 0: a lease from a snapshot written before registrations had one.
	Registration uint64
	TTL          time.Duration
	Deadline     time.Time
}

// Info is a lease as a process lists it (LEASES): the lease, its name and
// the keys attached to it.
type Info struct {
	Name string
	Lease
	Keys []string
	// Mine: this process holds it under the registration it made (another
	// process with the same holder may hold a lease as well; that one is
	// its own).
	Mine bool
}

// Ended is a lease an entry of the log ended (for every process that
// reads it), and the keys it removed.
type Ended struct {
	Name    string
	Keys    []string
	Expired bool // false: revoked
}

// Lost is a registration a process made and no longer holds, as that
// process tells it, once. It is not an Ended: a registration can be lost
// with no entry to show for it (its deadline passed while the process was
// stopped, or another process of the same holder registered it again).
type Lost struct {
	Name string
	// Holder is the holder the process that lost it is.
	Holder string
	// Lapsed: its deadline passed while the process was not running.
	Lapsed bool
	// Destroyed: it went with its config, destroyed under the process.
	Destroyed bool
	// Now is the lease of that name as it stands; nil: none.
	Now *Lease
}

func (l Lost) String() string {
	switch {
	case l.Destroyed:
		return fmt.Sprintf("Lease '%s' has ended: its config was destroyed; it is no longer held", l.Name)
	case l.Lapsed:
		return fmt.Sprintf("Lease '%s' expired while this process was not running; it is no longer held", l.Name)
	case l.Now == nil:
		return fmt.Sprintf("Lease '%s' has ended (it expired or was revoked); it is no longer held", l.Name)
	case l.Now.Holder == l.Holder:
		return fmt.Sprintf("Lease '%s' was registered again by another process of writer '%s'; this process no longer holds it", l.Name, l.Holder)
	}
	return fmt.Sprintf("Lease '%s' has ended and is now held by '%s'; this process no longer holds it", l.Name, l.Now.Holder)
}

// Errors of the lease operations.
var (
	ErrUnknown = errors.New("no such lease")
	ErrHeld    = errors.New("the lease is held by another writer")
	// ErrExpired: the operation reached the log after the lease's
	// deadline, so the log refused it; the lease is ending.
	ErrExpired = errors.New("the lease is past its deadline by the server's clock and is expiring")
	// ErrEnded: a refresh, appended because the local copy showed the
	// lease held, reached the log after the lease was gone: it had expired,
	// or been revoked.
	ErrEnded = errors.New("the lease had ended (it expired, or was revoked)")
	// ErrNotMine: the lease is held by this process's holder, but under a
	// registration another process made (a process keeps alive, revokes
	// and puts under only the registration it made), or this process's
	// registration ended and the lease was registered again.
	ErrNotMine = errors.New("the lease is held by this writer under a registration another process made")
	ErrBadTTL  = errors.New("a lease's ttl must be a whole number of milliseconds, from 1s to 24h")
)

// MinTTL and MaxTTL bound a lease's ttl.
const (
	MinTTL = time.Second
	MaxTTL = 24 * time.Hour
)

// ParseTTL reads a ttl: a Go duration ("10s", "1m30s") or a bare number of
// seconds ("10").
func ParseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, err2 := strconv.ParseFloat(s, 64)
		if err2 != nil {
			return 0, fmt.Errorf("%w: '%s' is neither a duration such as 10s nor a number of seconds", ErrBadTTL, s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if CheckTTL(d) != nil {
		return 0, fmt.Errorf("%w: '%s'", ErrBadTTL, s)
	}
	return d, nil
}

// CheckTTL returns ErrBadTTL unless d is a ttl a lease may have.
func CheckTTL(d time.Duration) error {
	if d < MinTTL || d > MaxTTL || d%time.Millisecond != 0 {
		return fmt.Errorf("%w: %s", ErrBadTTL, d)
	}
	return nil
}
