package sharedconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Change is one entry of a config's log, decoded.
type Change struct {
	Revision uint64
	Time     time.Time // when the log stored it; zero if unknown
	Writer   string    // who wrote it; empty if unknown
	// Local: this process wrote it.
	Local bool
	// Snapshot: a compaction (or the initial state) that replaced all
	// history before it; Properties is then how many it held.
	Snapshot   bool
	Properties int
	// Ops are an update's operations.
	Ops []Op
	// State, for a snapshot, is what it holds.
	State State
	// Foreign, when not empty, says why the entry was stepped over: another
	// program wrote it, and it holds no change.
	Foreign string
	// Damage, when not empty, says why the entry does not read (History and
	// Repair list such entries; reading the config stops at them).
	Damage string
	// Ended are the leases the entry ended (expired or revoked) with the
	// keys that went with them. Changes heard as they land (Watch) know
	// it; History works it out for entries that expire or revoke a lease.
	Ended []lease.Ended
}

// Op is one operation of an update: a put, a remove or a clear, or a lease
// operation (lease.go).
type Op struct {
	Kind       string // "put", "remove", "clear", or a lease op's wire name
	Key, Value string
	// Lease: the put's lease, or the lease a lease operation is about; in
	// a key's History, a remove's: the lease of the value removed.
	Lease, Holder string
	TTL           time.Duration // register_lease
	// Registration: the registration a refresh or revocation is for (0:
	// any, in entries written before registrations had one).
	Registration uint64
	// HandedBy, on a put the entry's writer committed for another writer
	// that handed it over (combining), is the name that writer goes by:
	// shown, not trusted, since anyone can hand calls.
	HandedBy string
	// Local, in a change a Watch hears: this process made the operation.
	// Under combining an entry may hold the calls of several processes:
	// one this process wrote may carry PUTs others handed it (not Local,
	// though the Change is), and another's may carry a PUT this process
	// handed (Local, though the Change is not). A PUT this process handed
	// and gave up on (its outcome unknown) that another then carried is
	// not Local: the process no longer waits for it, and hears it as news.
	Local bool
}

func (o Op) String() string {
	switch o.Kind {
	case "put":
		return fmt.Sprintf("PUT %s = %s", o.Key, o.Value)
	case "remove":
		return "REMOVE " + o.Key
	case "clear":
		return "CLEAR"
	default:
		return strings.ToUpper(o.Kind) + " " + o.Lease
	}
}

func opsOf(updates []statesync.Update[State]) []Op {
	ops := make([]Op, 0, len(updates))
	for _, u := range updates {
		switch u := u.(type) {
		case putUpdate:
			ops = append(ops, Op{Kind: "put", Key: u.Key, Value: u.Value})
		case removeUpdate:
			ops = append(ops, Op{Kind: "remove", Key: u.Key})
		case clearUpdate:
			ops = append(ops, Op{Kind: "clear"})
		default:
			if op, ok := leaseOp(u); ok {
				ops = append(ops, op)
			}
		}
	}
	return ops
}

// changeOf describes an entry: its updates, or for a snapshot the state it
// sets up. LOG and follow mode both describe entries this way.
func changeOf(e statesync.Entry, updates []statesync.Update[State], snapshot State, local bool) Change {
	ch := Change{Revision: e.Revision, Time: e.Time, Writer: e.Writer, Local: local, Snapshot: e.Snapshot, Foreign: e.Foreign}
	if e.Snapshot {
		ch.State, ch.Properties = snapshot, snapshot.Len()
		return ch
	}
	ch.Ops = opsOf(updates)
	for i := range ch.Ops {
		ch.Ops[i].Local = local
	}
	if len(ch.Ops) == len(updates) {
		for _, c := range e.Carried {
			if c.Writer == "" || c.Writer == e.Writer || c.End > len(ch.Ops) {
				continue
			}
			for i := c.Start; i < c.End; i++ {
				ch.Ops[i].HandedBy = c.Writer
			}
		}
	}
	return ch
}

// decode reads one entry of the log into a Change.
func (c *Config) decode(e statesync.Entry) (Change, error) {
	bad := func(err error) (Change, error) {
		return changeOf(e, nil, State{}, false), fmt.Errorf("%s: %w", c.Log().Name(), &statesync.EntryError{Revision: e.Revision, Err: err})
	}
	if e.Foreign != "" {
		return changeOf(e, nil, State{}, false), nil
	}
	if e.Snapshot {
		init, err := codec{}.DecodeInitial(e.Data)
		if err != nil {
			return bad(err)
		}
		return changeOf(e, nil, init.Create(e.Revision), false), nil
	}
	updates, err := codec{}.DecodeUpdates(e.Data)
	if err != nil {
		return bad(err)
	}
	return changeOf(e, updates, State{}, false), nil
}

// History reads the log back as changes, oldest first. With an empty key:
// every entry (LOG). With a key: only the changes to key (HISTORY), each
// narrowed to what it did to key: Ops is one put (the value it set, and
// its lease) or one remove (with the lease of the value removed), and
// Ended the lease whose end removed it, if one did; the first is the
// snapshot the history starts from, with a put if key had a value there.
// last > 0 keeps only the newest last changes. Where compaction has
// dropped older entries, the first is the snapshot that replaced them.
func (c *Config) History(ctx context.Context, key string, last int) ([]Change, error) {
	if key == "" {
		return c.logHistory(ctx, last)
	}
	changes, err := c.keyHistory(ctx, key)
	if last > 0 && len(changes) > last {
		changes = changes[len(changes)-last:]
	}
	return changes, err
}

// logHistory returns up to the last n entries of the log (all if n is 0).
func (c *Config) logHistory(ctx context.Context, n int) ([]Change, error) {
	last, err := lastRevision(ctx, c.Log())
	if err != nil {
		return nil, err
	}
	after := uint64(0)
	if n > 0 && uint64(n) < last {
		after = last - uint64(n)
	}
	var out []Change
	err = c.readChanges(ctx, statesync.Position{Revision: after}, last, func(ch Change) { out = append(out, ch) })
	if n > 0 && len(out) > n { // a snapshot that covered a gap may add one
		out = out[len(out)-n:]
	}
	if err == nil && slices.ContainsFunc(out, endsLeases) {
		err = c.addEnded(ctx, last, out)
	}
	return out, err
}

// addEnded sets Ended on the changes that end leases, replaying the log
// from its first snapshot (as keyHistory does): an expiry before its
// deadline, a witness, ends nothing, and only the state before it says so.
func (c *Config) addEnded(ctx context.Context, last uint64, changes []Change) error {
	at := map[uint64]*Change{}
	for i := range changes {
		if endsLeases(changes[i]) {
			at[changes[i].Revision] = &changes[i]
		}
	}
	var st State
	replaying := false
	return c.Log().ReadAfter(ctx, statesync.Position{}, last, func(e statesync.Entry) error {
		ch, err := c.decode(e)
		if err != nil || ch.Foreign != "" {
			return nil // damage and foreign entries change nothing; LOG shows them
		}
		if ch.Snapshot {
			st, replaying = ch.State, true
			return nil
		}
		updates, err := codec{}.DecodeUpdates(e.Data)
		if err != nil || !replaying {
			return nil
		}
		before := st
		for _, u := range updates {
			st = applyAt(st, u, e.Revision, e.Time)
		}
		if ch := at[e.Revision]; ch != nil {
			ch.Ended = endedLeases(before, st, updates)
		}
		return nil
	})
}

// readChanges calls fn with each entry after the one at after up to upTo,
// decoded, and reads on past damage: an entry that does not read comes
// with Damage set. An after with an ID binds the read to that entry (see
// statesync.Log).
func (c *Config) readChanges(ctx context.Context, after statesync.Position, upTo uint64, fn func(Change)) error {
	for after.Revision < upTo {
		err := c.Log().ReadAfter(ctx, after, upTo, func(e statesync.Entry) error {
			ch, err := c.decode(e)
			var entryErr *statesync.EntryError
			if errors.As(err, &entryErr) {
				ch.Damage = entryErr.Err.Error()
			} else if err != nil {
				return err
			}
			fn(ch)
			after = e.Position
			return nil
		})
		var entryErr *statesync.EntryError
		switch {
		case err == nil, errors.Is(err, statesync.ErrEmptied):
			return nil // emptied: purged, and no entry left to read
		case errors.As(err, &entryErr) && entryErr.Revision > after.Revision+1 && errors.Is(err, statesync.ErrStateGone):
			// The entry reads; what went before it does not (a purge by
			// hand): read it from just before, as its sequel.
			after = statesync.Position{Revision: entryErr.Revision - 1}
		case errors.As(err, &entryErr) && entryErr.Revision > after.Revision:
			// The log cannot read this one at all: say so and read on.
			fn(Change{Revision: entryErr.Revision, Damage: entryErr.Err.Error()})
			after = statesync.Position{Revision: entryErr.Revision}
		default:
			return err
		}
	}
	return nil
}

// keyHistory returns the changes to key, narrowed to it (History with a key),
// as far back as compaction allows. st is replayed from the newest snapshot
// on, so that whatever removes the key shows (a lease's end too).
func (c *Config) keyHistory(ctx context.Context, key string) ([]Change, error) {
	last, err := lastRevision(ctx, c.Log())
	if err != nil {
		return nil, err
	}
	var changes []Change
	var st State
	replaying := false
	err = c.Log().ReadAfter(ctx, statesync.Position{}, last, func(e statesync.Entry) error {
		ch, err := c.decode(e)
		if err != nil {
			return err
		}
		if ch.Snapshot {
			st, replaying = ch.State, true
			ch.Ops = nil
			if p, ok := st.Lookup(key); ok {
				ch.Ops = []Op{{Kind: "put", Key: key, Value: p.Value, Lease: p.Lease}}
			}
			changes = append(changes[:0], ch) // a snapshot replaces what came before
			return nil
		}
		if ch.Foreign != "" || !replaying {
			return nil
		}
		updates, err := codec{}.DecodeUpdates(e.Data)
		if err != nil {
			return err
		}
		before := st
		for _, u := range updates {
			st = applyAt(st, u, e.Revision, e.Time)
		}
		if ch, changed := keyChange(ch, key, before, st, updates); changed {
			changes = append(changes, ch)
		}
		return nil
	})
	return changes, err
}

// keyChange narrows ch, an entry that took before to after, to what it did
// to key, if it changed it: set it (again, at another revision) or removed
// it, maybe by ending its lease.
func keyChange(ch Change, key string, before, after State, updates []statesync.Update[State]) (Change, bool) {
	was, had := before.Lookup(key)
	now, has := after.Lookup(key)
	ch.Ended = nil
	switch {
	case has && (!had || now.Revision != was.Revision):
		ch.Ops = []Op{{Kind: "put", Key: key, Value: now.Value, Lease: now.Lease, HandedBy: handedBy(ch.Ops, key)}}
	case had && !has:
		ch.Ops = []Op{{Kind: "remove", Key: key, Lease: was.Lease}}
		for _, e := range endedLeases(before, after, updates) {
			if e.Name == was.Lease {
				e.Keys = []string{key}
				ch.Ended = []lease.Ended{e}
			}
		}
	default:
		return ch, false
	}
	return ch, true
}

// handedBy is the writer that handed the entry's last put of key to its
// writer, if one did (Op.HandedBy).
func handedBy(ops []Op, key string) string {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].Kind == "put" && ops[i].Key == key {
			return ops[i].HandedBy
		}
	}
	return ""
}

// Status is what STATUS shows.
type Status struct {
	// Revision is the local copy's; LastRevision the log's, just read.
	Revision, LastRevision uint64
	EntriesSinceCompaction uint64
	Properties             int
	Bytes                  int // of keys and values
	// Compaction is the policy this process compacts by.
	Compaction CompactionPolicy
}

// Status reads the log's last revision and describes the local copy.
func (c *Config) Status(ctx context.Context) (Status, error) {
	state := c.State()
	rev, _ := c.Revision() // with no state there too (a purge)
	st := Status{Revision: rev, EntriesSinceCompaction: c.entriesSinceCompaction(), Compaction: c.policy}
	st.Properties = state.Len()
	for k, p := range state.All() {
		st.Bytes += len(k) + len(p.Value)
	}
	var err error
	st.LastRevision, err = lastRevision(ctx, c.Log())
	return st, err
}

// lastRevision is the revision of log's last entry.
func lastRevision(ctx context.Context, log statesync.Log) (uint64, error) {
	last, err := log.LastPosition(ctx)
	return last.Revision, err
}
