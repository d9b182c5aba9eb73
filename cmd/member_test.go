package cmd

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// heldAppend is a log whose next append, once armed, waits until released:
// a write that waits (for its turn among many writers, say).
type heldAppend struct {
	statesync.Log
	armed   atomic.Bool
	held    chan struct{} // closed when an append waits
	release chan struct{}
}

func (l *heldAppend) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	if l.armed.CompareAndSwap(true, false) {
		close(l.held)
		<-l.release
	}
	return l.Log.AppendAfter(ctx, last, data)
}

// A member leaves as a quitting shell does (Leases.RevokeHeld): its
// keeper stopped, a revocation held up past the lease's deadline finds it
// expired by another process, which is the end the member was leaving
// for: nothing to say, and a clean exit.
func TestMemberLeavingQuietWhenItsLeaseExpiresMeanwhile(t *testing.T) {
	ctx := context.Background()
	srv := jstest.Server(t)
	open := func(writer string, wrap func(statesync.Log) statesync.Log) *sharedconfig.Config {
		l, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "member", "leave", jetstream.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := sharedconfig.Open(ctx, wrap(l), sharedconfig.Options{Holder: writer})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	log := &heldAppend{held: make(chan struct{}), release: make(chan struct{})}
	member := open("member", func(l statesync.Log) statesync.Log { log.Log = l; return log })
	other := open("other", func(l statesync.Log) statesync.Log { return l })
	if _, err := member.Leases().Register(ctx, "/servers/1", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := member.Put(ctx, "/servers/1", "up", sharedconfig.WithLease("/servers/1")); err != nil {
		t.Fatal(err)
	}
	stop := other.Leases().Keep(nil) // it writes the expiries that fall due
	defer stop()
	log.armed.Store(true)
	var warnings []string
	left := make(chan bool, 1)
	go func() {
		left <- leaveMember(ctx, member, func(msg string) { warnings = append(warnings, msg) })
	}()
	<-log.held
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := other.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, held := other.State().Lease("/servers/1"); !held {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the other process did not expire the member's lease")
		}
	}
	close(log.release)
	if ok := <-left; !ok || len(warnings) != 0 {
		t.Fatalf("the member's leave: ok %v, said %q; want a clean leave, saying nothing", ok, warnings)
	}
}
