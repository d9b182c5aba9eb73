package statesync_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// mutedLog is a memlog whose appends reach the follower only when the test
// says (hear), so that a test can order what the follower sees.
type mutedLog struct {
	*memlog.Log
	mu     sync.Mutex
	notify []func()
}

func (l *mutedLog) Notify(fn func()) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notify = append(l.notify, fn)
	return func() {}, nil
}

func (l *mutedLog) hear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.notify {
		fn()
	}
}

// A follower hears that its log was created again when another call of the
// synchronizer (a write) found it so and reloaded the copy: the follower's
// next read finds nothing odd, and its watchers would take the new log's
// entries, numbered from 1 again, for more of the old log's.
func TestFollowerHearsOfALogAWriteFoundReplaced(t *testing.T) {
	// The follower's first read, at once, must be over before the log is
	// created again, or it finds that itself: then try again.
	for try := range 5 {
		if writeFoundReplaced(t, time.Duration(try+1)*100*time.Millisecond) {
			return
		}
	}
	t.Fatal("the follower's first read kept finding the new log before the write")
}

// writeFoundReplaced runs the test once: false if the follower found the
// new log before the write did.
func writeFoundReplaced(t *testing.T, settle time.Duration) bool {
	ctx := context.Background()
	log := &mutedLog{Log: memlog.New("t")}
	s := newCounter(t, log)
	for range 3 {
		if _, err := increment(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	heard := make(chan error, 10)
	stop, err := s.Follow(func(err error) { heard <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	time.Sleep(settle)
	log.Recreate()
	fresh := newCounter(t, log)
	if _, err := increment(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := increment(ctx, s); !errors.Is(err, statesync.ErrReplaced) {
		t.Logf("a write on the old copy: %v; the follower found the new log first", err)
		return false
	}
	log.hear()
	select {
	case err := <-heard:
		if !errors.Is(err, statesync.ErrReplaced) {
			t.Fatalf("the follower heard %v, want ErrReplaced", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the follower never heard that its log was created again")
	}
	return true
}
