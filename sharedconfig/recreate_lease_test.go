package sharedconfig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A lease keeper whose config is destroyed and created again says that the
// lease went with the config, not that it expired: its refresh, which
// nothing conditions, lands in the new config below the old copy's
// revision, and must not be read against the old copy.
func TestKeeperSaysItsConfigWasDestroyed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{Holder: "h"})
	defer c.Close()
	if _, err := c.Leases().Register(ctx, "L", time.Second); err != nil {
		t.Fatal(err)
	}
	put(t, c, "a", "1") // the copy is at revision 3
	if err := jetstream.DeleteConfig(ctx, jstest.Connect(t, e.srv), "test", e.name); err != nil {
		t.Fatal(err)
	}
	again := e.open(sharedconfig.Options{}) // revision 1: a snapshot
	defer again.Close()
	warned := make(chan string, 10)
	defer c.Leases().Keep(func(msg string) { warned <- msg })()
	select {
	case msg := <-warned:
		if !strings.Contains(msg, "its config was destroyed") {
			t.Fatalf("the keeper said %q; want that the lease's config was destroyed", msg)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the keeper said nothing of the lease its config took with it")
	}
}
