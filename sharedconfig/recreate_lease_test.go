package sharedconfig_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
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

// A registration is of one incarnation of its config. Process a registers
// L; the config is destroyed, and b, of the same writer, creates it again
// and registers L, at the revision a's registration had. a, reloaded,
// must not take b's registration for its own: not keep it alive, put under
// it, or revoke it (with b's keys) on its way out.
func TestRegistrationDoesNotOutliveItsConfig(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a := e.open(sharedconfig.Options{Holder: "server-1"})
	defer a.Close()
	if _, err := a.Leases().Register(ctx, "L", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "/servers/1", "A-addr", sharedconfig.WithLease("L")); err != nil {
		t.Fatal(err)
	}
	if err := jetstream.DeleteConfig(ctx, jstest.Connect(t, e.srv), "test", e.name); err != nil {
		t.Fatal(err)
	}
	b := e.open(sharedconfig.Options{Holder: "server-1"})
	defer b.Close()
	if _, err := b.Leases().Register(ctx, "L", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "/servers/1", "B-addr", sharedconfig.WithLease("L")); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); !errors.Is(err, statesync.ErrReplaced) {
		t.Fatalf("a's refresh across the new config: %v, want ErrReplaced", err)
	}
	for _, l := range a.Leases().List() {
		if l.Mine {
			t.Fatalf("a calls b's %+v its own", l)
		}
	}
	if _, err := a.Put(ctx, "/servers/1", "A-again", sharedconfig.WithLease("L")); !errors.Is(err, lease.ErrNotMine) {
		t.Fatalf("a's put under b's registration: %v, want lease.ErrNotMine", err)
	}
	lost, err := a.Leases().RevokeHeld(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || !strings.Contains(lost[0].String(), "its config was destroyed") {
		t.Fatalf("a's exit reported %v, want its lease gone with its config", lost)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok := b.Get("/servers/1"); v != "B-addr" {
		t.Fatalf("after a's exit b's /servers/1 is %q (%v), want B-addr", v, ok)
	}
}
