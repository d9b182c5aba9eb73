package statesync

import (
	"errors"
	"sync"
)

// errClosed: the synchronizer was closed.
var errClosed = errors.New("the synchronizer is closed")

// lifetime is what a synchronizer runs in the background, for Close to
// stop: its follows (Follow). Its hearing of turns is the contention
// manager's (contention.close).
type lifetime struct {
	mu      sync.Mutex
	closed  bool
	next    int
	follows map[int]func()
}

// track registers stop, which ends a follow, and returns the function that
// calls it once and forgets it; ok is false once closed.
func (l *lifetime) track(stop func()) (stopOnce func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false
	}
	if l.follows == nil {
		l.follows = map[int]func(){}
	}
	id := l.next
	l.next++
	l.follows[id] = stop
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.follows, id)
			l.mu.Unlock()
			stop()
		})
	}, true
}

func (l *lifetime) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// close marks the lifetime over and returns the follows still running;
// first is false if it was already over.
func (l *lifetime) close() (stops []func(), first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false
	}
	l.closed = true
	for _, stop := range l.follows {
		stops = append(stops, stop)
	}
	l.follows = nil
	return stops, true
}

// Close stops what the synchronizer runs in the background and waits for
// it to end: its follows, and its hearing of other writers' turns (saying
// it is done first, if it holds a turn, so that nobody waits for it). The
// log is the caller's, who closes it. The local copy stays readable;
// Follow fails afterwards. Closing again does nothing.
func (s *Synchronizer[S]) Close() {
	stops, first := s.life.close()
	if !first {
		return
	}
	for _, stop := range stops {
		stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cm.Close()
}
