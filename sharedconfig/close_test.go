package sharedconfig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Closing a config and its log releases every subscription and goroutine
// they started, whatever was left running: a follow, a watch, a lease
// keeper, the turn listener, the reads' reply subscription. Closing again
// does nothing.
func TestCloseReleasesEverything(t *testing.T) {
	ctx := context.Background()
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	other := openOn(t, jstest.Connect(t, srv), "close", sharedconfig.Options{})
	// The connection's own reply subscription, which every request shares,
	// comes with its first request and stays.
	if _, err := jetstream.ListConfigs(ctx, nc); err != nil {
		t.Fatal(err)
	}
	subsBefore := nc.NumSubscriptions()
	before := goleak.IgnoreCurrent()

	log, c := openWithEverythingRunning(t, nc, other)
	if nc.NumSubscriptions() <= subsBefore {
		t.Fatal("the config subscribed to nothing")
	}

	for range 2 {
		c.Close()
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := nc.NumSubscriptions(); n != subsBefore {
		t.Errorf("%d subscriptions after Close, want %d as before the open", n, subsBefore)
	}
	goleak.VerifyNone(t, before)
	if _, err := c.Watch("", func(sharedconfig.Change) {}, nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Watch after Close = %v, want an error saying the config is closed", err)
	}
	if v, _ := c.Get("a"); v != "1" {
		t.Errorf("the local copy after Close has a = %q, want 1", v)
	}
}

// openWithEverythingRunning opens config test/close on nc, writes to it
// (which starts the turn listener), reads what other wrote (a direct get:
// its reply subscription) and leaves two watches (the whole config and a
// prefix) and a lease keeper running, with a lease to keep.
func openWithEverythingRunning(t *testing.T, nc *nats.Conn, other *sharedconfig.Config) (*jetstream.Log, *sharedconfig.Config) {
	t.Helper()
	ctx := context.Background()
	log, err := jetstream.OpenLog(ctx, nc, "test", "close", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sharedconfig.Open(ctx, log, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Put(ctx, "b", "2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leases().Register(ctx, "L", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Watch("", func(sharedconfig.Change) {}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Watch("a", func(sharedconfig.Change) {}, nil); err != nil {
		t.Fatal(err)
	}
	c.Leases().Keep(nil)
	return log, c
}
