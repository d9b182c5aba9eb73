package sharedconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// skewedLog is a real log read as if the server's clock stood shift away
// from this process's: every entry's time is moved by shift, as it would be
// on a server whose clock is that far off.
type skewedLog struct {
	*jetstream.Log
	shift time.Duration
}

func (l skewedLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	return l.Log.ReadAfter(ctx, after, upTo, l.shifted(fn))
}

func (l skewedLog) shifted(fn func(statesync.Entry) error) func(statesync.Entry) error {
	return func(e statesync.Entry) error {
		if !e.Time.IsZero() {
			e.Time = e.Time.Add(l.shift)
		}
		return fn(e)
	}
}

// With the server's clock an hour ahead of the processes' or an hour
// behind, each process estimates the server's clock from the entries it
// reads: a holder's estimate survives its own plain PUT (applied without
// reading it back), a watcher that never wrote knows it from the entries
// it follows. The lease is kept for three ttls while both keep leases, and
// once its holder stops refreshing, the watcher expires it on time.
func TestLeasesUnderServerClockSkew(t *testing.T) {
	for _, shift := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(shift.String(), func(t *testing.T) {
			t.Parallel()
			leaseUnderSkew(t, shift)
		})
	}
}

// openSkewed opens the config on srv as holder, through a log whose entry
// times read shift off the server's.
func openSkewed(t *testing.T, srv *localserver.Server, shift time.Duration, holder string) *sharedconfig.Config {
	ctx := context.Background()
	l, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "skew", "leases", jetstream.LogOptions{})
	ok(t, err)
	c, err := sharedconfig.Open(ctx, skewedLog{l, shift}, sharedconfig.Options{Holder: holder})
	ok(t, err)
	return c
}

func leaseUnderSkew(t *testing.T, shift time.Duration) {
	ctx := context.Background()
	srv := jstest.Server(t)
	holder, watcher := openSkewed(t, srv, shift, "holder"), openSkewed(t, srv, shift, "watcher")
	const ttl = lease.MinTTL
	_, err := holder.Leases().Register(ctx, "member", ttl)
	ok(t, err)
	_, err = holder.Put(ctx, "/servers/1", "up", sharedconfig.WithLease("member"))
	ok(t, err)
	_, err = holder.Put(ctx, "plain", "x")
	ok(t, err)
	checkServerNow(t, "the holder, after a plain PUT", holder, shift)

	removed := make(chan time.Time, 1)
	stopWatch, err := watcher.Watch("/servers/", func(ch sharedconfig.Change) {
		for _, e := range ch.Ended {
			if e.Name == "member" {
				select {
				case removed <- time.Now():
				default:
				}
			}
		}
	}, func(err error) { t.Error(err) })
	ok(t, err)
	defer stopWatch()
	ok(t, watcher.Refresh(ctx))
	checkServerNow(t, "the watcher, which never wrote", watcher, shift)

	stopHolder := holder.Leases().Keep(func(msg string) { t.Log("holder:", msg) })
	stopWatcher := watcher.Leases().Keep(func(msg string) { t.Log("watcher:", msg) })
	defer stopWatcher()
	select {
	case at := <-removed:
		stopHolder()
		t.Fatalf("the lease ended at %s while its holder kept it", at.Format(time.StampMilli))
	case <-time.After(3 * ttl):
	}
	checkServerNow(t, "the watcher, following", watcher, shift)

	stopHolder() // the holder stops refreshing, as if killed
	stopped := time.Now()
	select {
	case at := <-removed:
		// The last refresh was at most a third of the ttl before the stop.
		if took := at.Sub(stopped); took > ttl+time.Second {
			t.Errorf("the watcher expired the lease %s after its holder stopped, more than the ttl (%s) and 1s", took, ttl)
		} else {
			t.Logf("the watcher expired the lease %s after its holder stopped", took)
		}
	case <-time.After(4 * ttl):
		t.Fatalf("the watcher had not expired the lease %s after its holder stopped", 4*ttl)
	}
}

// checkServerNow fails unless c's estimate of the server's clock is within
// a second of the truth: the local clock moved by shift.
func checkServerNow(t *testing.T, who string, c *sharedconfig.Config, shift time.Duration) {
	t.Helper()
	if off := c.Leases().Now().Sub(time.Now().Add(shift)); off > time.Second || off < -time.Second {
		t.Errorf("%s estimates the server's clock %s off", who, off)
	}
}
