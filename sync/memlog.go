package statesync

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemLog is a Log held in memory, for tests. Its zero value is not usable;
// call NewMemLog.
type MemLog struct {
	name string

	mu        sync.Mutex
	entries   []Entry // in revision order; compaction leaves a snapshot first
	last      uint64
	notifiers map[int]func()
	listeners map[int]func([]byte)
	nextID    int
	now       func() time.Time // the log's clock: Entry.Time
}

// NewMemLog returns an empty in-memory log.
func NewMemLog(name string) *MemLog { return &MemLog{name: name} }

// SetClock makes now the log's clock, the time it stamps on entries (by
// default time.Now): tests of time-dependent updates (TimedUpdate) drive it.
func (l *MemLog) SetClock(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}

// Name implements Log.
func (l *MemLog) Name() string { return l.name }

// Append implements Log.
func (l *MemLog) Append(ctx context.Context, expected uint64, data []byte) (uint64, error) {
	return l.add(ctx, expected, Entry{Data: slices.Clone(data)})
}

// Compact implements Log.
func (l *MemLog) Compact(ctx context.Context, expected uint64, snapshot []byte) (uint64, error) {
	return l.add(ctx, expected, Entry{Snapshot: true, Data: slices.Clone(snapshot)})
}

func (l *MemLog) add(ctx context.Context, expected uint64, e Entry) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if expected != AnyRevision && expected != l.last {
		return 0, &ConflictError{Expected: expected, Current: l.last}
	}
	l.last++
	e.Revision = l.last
	e.Time = time.Now()
	if l.now != nil {
		e.Time = l.now()
	}
	if e.Snapshot {
		l.entries = []Entry{e}
	} else {
		l.entries = append(l.entries, e)
	}
	for _, fn := range l.notifiers {
		go fn()
	}
	return e.Revision, nil
}

// Notify implements Notifier.
func (l *MemLog) Notify(fn func()) (stop func(), err error) {
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

// Read implements Log.
func (l *MemLog) Read(ctx context.Context, after, upTo uint64, fn func(Entry) error) error {
	if upTo < after {
		return fmt.Errorf("%s: reading entries after %d up to %d: the end is before the start", l.name, after, upTo)
	}
	l.mu.Lock()
	// Entries are never changed once stored, so a copy of the slice header
	// is a stable view to read outside the lock.
	entries := l.entries
	l.mu.Unlock()
	next := after + 1
	for _, e := range entries {
		if e.Revision <= after {
			continue
		}
		gap := e.Revision != next
		if e.Revision > upTo && !gap {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if gap && !e.Snapshot {
			return fmt.Errorf("%s: after revision %d the next entry is %d: %w", l.name, next-1, e.Revision, ErrGap)
		}
		next = e.Revision + 1
		if err := fn(e); err != nil {
			return err
		}
		if e.Revision >= upTo {
			break // a snapshot that covered the range may lie past it
		}
	}
	return nil
}

// LastRevision implements Log.
func (l *MemLog) LastRevision(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, nil
}

// Announce implements Announcer: it calls every listener before it returns.
func (l *MemLog) Announce(word []byte) error {
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

// Listen implements Announcer.
func (l *MemLog) Listen(fn func(word []byte)) (stop func(), err error) {
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
