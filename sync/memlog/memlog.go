package memlog

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Log is a statesync.Log held in memory, for tests. Its zero value is
// not usable; call New.
type Log struct {
	name string

	mu        sync.Mutex
	entries   []statesync.Entry // in revision order; compaction leaves a snapshot first
	last      uint64
	notifiers map[int]func()
	listeners map[int]func([]byte)
	takers    map[string]map[int]func([]byte, string, func([]byte)) // by the id they take for
	nextID    int
	now       func() time.Time // the log's clock: statesync.Entry.Time
	// incarnation counts the times the log was created (see Recreate); it
	// makes entry IDs unique across incarnations.
	incarnation int
}

// New returns an empty in-memory log.
func New(name string) *Log { return &Log{name: name, incarnation: 1} }

// Recreate models a log deleted and created again under its name: every
// entry goes, revisions start again from 1, and the new entries' IDs are
// new.
func (l *Log) Recreate() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries, l.last = nil, 0
	l.incarnation++
}

// Purge models a JetStream stream purged by hand: every entry goes, with
// no snapshot in their place, and revisions go on from the last (see
// statesync.ErrEmptied).
func (l *Log) Purge() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

// PurgeBefore models a JetStream stream purged by hand of the entries
// before revision seq (nats stream purge --seq), which keeps the rest as
// they are, with no snapshot in place of those removed.
func (l *Log) PurgeBefore(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = slices.DeleteFunc(slices.Clone(l.entries), func(e statesync.Entry) bool { return e.Revision < seq })
}

// SetClock makes now the log's clock, the time it stamps on entries (by
// default time.Now): tests of time-dependent updates (statesync.TimedUpdate) drive it.
func (l *Log) SetClock(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}

// Name implements statesync.Log.
func (l *Log) Name() string { return l.name }

// AppendAfter implements statesync.Log.
func (l *Log) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	return l.addAfter(ctx, last, statesync.Entry{Data: slices.Clone(data), Speaker: turns.Speaker(ctx), Carried: slices.Clone(statesync.CarriedOf(ctx)), Unconditional: last.Revision == statesync.AnyRevision})
}

// CompactAfter implements statesync.Log.
func (l *Log) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	return l.addAfter(ctx, last, statesync.Entry{Snapshot: true, Data: slices.Clone(snapshot), Speaker: turns.Speaker(ctx), Purged: statesync.PurgedOf(ctx)})
}

func (l *Log) addAfter(ctx context.Context, last statesync.Position, e statesync.Entry) (statesync.Position, error) {
	e.ID = last.ID // checked under the lock by add
	stored, err := l.add(ctx, last.Revision, e)
	if err != nil {
		return statesync.Position{}, err
	}
	return stored.Position, nil
}

// add appends e if the log is at expected and, when e.ID is set, its last
// entry has that ID, and returns the entry as stored: its position is read
// under the same lock, so that a Recreate cannot come between.
func (l *Log) add(ctx context.Context, expected uint64, e statesync.Entry) (statesync.Entry, error) {
	if err := ctx.Err(); err != nil {
		return statesync.Entry{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if expected != statesync.AnyRevision && expected != l.last {
		return statesync.Entry{}, &statesync.ConflictError{Current: l.last}
	}
	if want := e.ID; want != "" && expected != statesync.AnyRevision && want != fmt.Sprintf("%d.%d", l.incarnation, l.last) {
		return statesync.Entry{}, fmt.Errorf("%s: its entry %d is not the one read (%s): %w", l.name, l.last, want, statesync.ErrReplaced)
	}
	if e.ID != "" && expected != statesync.AnyRevision && len(l.entries) == 0 {
		return statesync.Entry{}, &statesync.ConflictError{} // the entry was purged
	}
	l.last++
	e.Revision = l.last
	e.ID = fmt.Sprintf("%d.%d", l.incarnation, l.last)
	e.Time = time.Now()
	if l.now != nil {
		e.Time = l.now()
	}
	if e.Snapshot {
		l.entries = []statesync.Entry{e}
	} else {
		l.entries = append(l.entries, e)
	}
	for _, fn := range l.notifiers {
		go fn()
	}
	return e, nil
}

// Notify implements statesync.Log.
func (l *Log) Notify(fn func()) (stop func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.notifiers == nil {
		l.notifiers = map[int]func(){}
	}
	id := l.nextID
	l.nextID++
	l.notifiers[id] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.notifiers, id)
	}, nil
}

// read is ReadAfter without the check of after's ID; gone: the entry at
// after is gone, so the first entry read follows a gap.
func (l *Log) read(ctx context.Context, after, upTo uint64, gone bool, fn func(statesync.Entry) error) error {
	if upTo < after {
		return fmt.Errorf("%s: reading entries after %d up to %d: the end is before the start", l.name, after, upTo)
	}
	l.mu.Lock()
	// Entries are never changed once stored, so a copy of the slice header
	// is a stable view to read outside the lock.
	entries, last := l.entries, l.last
	l.mu.Unlock()
	next := after + 1
	for _, e := range entries {
		if e.Revision <= after {
			continue
		}
		gap := e.Revision != next || gone
		if e.Revision > upTo && !gap {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if gap && e.Unconditional {
			continue // no state of its own: what follows decides
		}
		gone = false
		if gap && !e.Snapshot {
			return fmt.Errorf("%s: %w", l.name, &statesync.EntryError{Revision: e.Revision, Err: statesync.ErrStateGone})
		}
		next = e.Revision + 1
		if err := fn(e); err != nil {
			return err
		}
		if e.Revision >= upTo {
			break // a snapshot that covered the range may lie past it
		}
	}
	if next <= upTo && upTo <= last {
		return fmt.Errorf("%s: its entries after %d were removed, and no snapshot follows them: %w", l.name, next-1, statesync.ErrEmptied)
	}
	return nil
}

// ReadAfter implements statesync.Log.
func (l *Log) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	if after.ID != "" && after.Revision > 0 {
		l.mu.Lock()
		i := slices.IndexFunc(l.entries, func(e statesync.Entry) bool { return e.Revision == after.Revision })
		found := ""
		if i >= 0 {
			found = l.entries[i].ID
		}
		// Neither that entry nor any after it is left (Purge).
		gone := i < 0 && after.Revision <= l.last && (len(l.entries) == 0 || l.entries[len(l.entries)-1].Revision < after.Revision)
		// Compacted away or purged: what follows must start with a snapshot.
		missing := i < 0 && after.Revision <= l.last
		l.mu.Unlock()
		if i >= 0 && found != after.ID {
			return fmt.Errorf("%s: its entry %d is not the one read (%s but %s): %w", l.name, after.Revision, after.ID, found, statesync.ErrReplaced)
		}
		if gone && upTo >= after.Revision {
			return fmt.Errorf("%s: its entries from %d on were removed, and no snapshot follows them: %w", l.name, after.Revision, statesync.ErrEmptied)
		}
		return l.read(ctx, after.Revision, upTo, missing, fn)
	}
	return l.read(ctx, after.Revision, upTo, false, fn)
}

// Announce implements turns.Announcer: it calls every listener
// before it returns.
func (l *Log) Announce(word []byte) error {
	l.mu.Lock()
	listeners := make([]func([]byte), 0, len(l.listeners))
	for _, fn := range l.listeners {
		listeners = append(listeners, fn)
	}
	l.mu.Unlock()
	for _, fn := range listeners {
		fn(slices.Clone(word))
	}
	return nil
}

// Listen implements turns.Announcer.
func (l *Log) Listen(fn func(word []byte)) (stop func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listeners == nil {
		l.listeners = map[int]func([]byte){}
	}
	id := l.nextID
	l.nextID++
	l.listeners[id] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.listeners, id)
	}, nil
}

// Hand implements turns.Carrier: the first taker for to answers.
func (l *Log) Hand(ctx context.Context, to string, data []byte) ([]byte, error) {
	l.mu.Lock()
	var taker func([]byte, string, func([]byte))
	for _, fn := range l.takers[to] {
		taker = fn
		break
	}
	l.mu.Unlock()
	if taker == nil {
		return nil, fmt.Errorf("no writer %q takes calls: %w", to, turns.ErrNotTaken)
	}
	answer := make(chan []byte, 1)
	var once sync.Once
	taker(slices.Clone(data), "", func(a []byte) { once.Do(func() { answer <- slices.Clone(a) }) })
	select {
	case a := <-answer:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Take implements turns.Carrier.
func (l *Log) Take(id string, fn func(data []byte, writer string, answer func([]byte))) (stop func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.takers == nil {
		l.takers = map[string]map[int]func([]byte, string, func([]byte)){}
	}
	if l.takers[id] == nil {
		l.takers[id] = map[int]func([]byte, string, func([]byte)){}
	}
	n := l.nextID
	l.nextID++
	l.takers[id][n] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.takers[id], n)
	}, nil
}

// AppendRaw appends an entry as a foreign writer would, bypassing any codec:
// tests use it to put garbage in the log.
func (l *Log) AppendRaw(data []byte, snapshot bool) uint64 {
	stored, _ := l.add(context.Background(), statesync.AnyRevision, statesync.Entry{Data: slices.Clone(data), Snapshot: snapshot})
	return stored.Revision
}

// LastPosition implements statesync.Log.
func (l *Log) LastPosition(ctx context.Context) (statesync.Position, error) {
	if err := ctx.Err(); err != nil {
		return statesync.Position{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == 0 {
		// Empty, or emptied (Purge): no entry to name.
		return statesync.Position{Revision: l.last}, nil
	}
	return statesync.Position{Revision: l.last, ID: fmt.Sprintf("%d.%d", l.incarnation, l.last)}, nil
}
