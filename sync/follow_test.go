package statesync_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// earlyNotices is a log whose notices come before the entries they
// announce can be read, as a JetStream stream's subscribers hear a message
// before the stream has stored it.
type earlyNotices struct {
	*memlog.Log
	mu  sync.Mutex
	fns []func()
}

func (l *earlyNotices) Notify(fn func()) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns = append(l.fns, fn)
	return func() {}, nil
}

func (l *earlyNotices) announce() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.fns {
		fn()
	}
}

// A follower told of an append before the log serves it looks again soon,
// rather than at its next poll, seconds later.
func TestFollowLooksAgainAfterAnEarlyNotice(t *testing.T) {
	log := &earlyNotices{Log: memlog.New("t")}
	follower := newCounter(t, log)
	stop, err := follower.Follow(func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	writer := newCounter(t, log.Log) // appends without notices
	for want := counter(1); want <= 3; want++ {
		log.announce()
		time.Sleep(20 * time.Millisecond)
		if _, err := increment(context.Background(), writer); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Second)
		for value(t, follower) != want {
			if time.Now().After(deadline) {
				t.Fatalf("the follower is at %d a second after the append of %d it was told of", value(t, follower), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
