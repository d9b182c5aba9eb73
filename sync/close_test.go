package statesync_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// listenCounter is a memlog.Log that counts the listeners and notifiees it has.
type listenCounter struct {
	*memlog.Log
	mu   sync.Mutex
	live int
}

func (l *listenCounter) count(stop func(), err error) (func(), error) {
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.live++
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.live--
			l.mu.Unlock()
			stop()
		})
	}, nil
}

func (l *listenCounter) Listen(fn func([]byte)) (func(), error) { return l.count(l.Log.Listen(fn)) }
func (l *listenCounter) Notify(fn func()) (func(), error)       { return l.count(l.Log.Notify(fn)) }

func (l *listenCounter) listening() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live
}

// Close stops the follows left running and the turn listener, and waits
// for them; again, it does nothing. Follow then fails; State still reads.
func TestCloseStopsWhatRuns(t *testing.T) {
	before := goleak.IgnoreCurrent()
	log := &listenCounter{Log: memlog.New("close")}
	s := newCounter(t, log)
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Follow(nil); err != nil {
			t.Fatal(err)
		}
	}
	if log.listening() != 3 {
		t.Fatalf("%d listeners before Close, want 3 (turns, two follows)", log.listening())
	}
	s.Close()
	s.Close()
	if n := log.listening(); n != 0 {
		t.Errorf("%d listeners after Close, want 0", n)
	}
	goleak.VerifyNone(t, before)
	if _, err := s.Follow(nil); !errors.Is(err, statesync.ErrClosed) {
		t.Errorf("Follow after Close = %v, want ErrClosed", err)
	}
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err) // the log is the caller's: writes still work, unheard
	}
	if n := log.listening(); n != 0 {
		t.Errorf("a write after Close listens again: %d listeners", n)
	}
	if got := value(t, s); got != 2 {
		t.Errorf("the state is %d after Close, want 2", got)
	}
}

// A synchronizer that listens from its first write says nothing, and hears
// nothing, until it writes.
func TestTurnsFromFirstWrite(t *testing.T) {
	log := &listenCounter{Log: memlog.New("lazy")}
	s := newCounter(t, log, statesync.WithTurns(turns.New(turns.Options{FromFirstWrite: true})))
	defer s.Close()
	if err := s.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := log.listening(); n != 0 {
		t.Fatalf("%d listeners before any write, want 0", n)
	}
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if n := log.listening(); n != 1 {
		t.Fatalf("%d listeners after a write, want 1", n)
	}
}
