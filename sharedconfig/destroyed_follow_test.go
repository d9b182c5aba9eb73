package sharedconfig_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// A process that follows its config (a watch, FOLLOW ON) listens on the
// config's subject, so a publish to it after the config was destroyed is
// heard, by that very process, and answered by nobody. Its writes must
// still find the config destroyed at once, and the next one create it
// again, as a process that does not follow does: they waited out their
// whole time and said the server did not answer.
func TestFollowerCreatesItsDestroyedConfigAgain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	defer c.Close()
	put(t, c, "a", "1")
	stop, err := c.Watch("", func(sharedconfig.Change) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := jetstream.DeleteConfig(ctx, jstest.Connect(t, e.srv), "test", e.name); err != nil {
		t.Fatal(err)
	}
	// The first put finds it destroyed (or, if the follower found that
	// first, creates it again); the second creates it again if the first
	// did not.
	for i, want := range []string{"finds it destroyed", "creates it again"} {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		_, err := c.Put(wctx, "b", "2")
		cancel()
		took := time.Since(start)
		switch {
		case i == 0 && errors.Is(err, statesync.ErrDeleted), err == nil:
		default:
			t.Fatalf("put %d after the destroy (it %s): %v after %s", i+1, want, err, took.Round(time.Millisecond))
		}
		if took > 5*time.Second {
			t.Errorf("put %d after the destroy took %s", i+1, took.Round(time.Millisecond))
		}
	}
	if got, ok := c.Get("b"); !ok || got != "2" {
		t.Fatalf("after the put that created it again, b is %q (%v)", got, ok)
	}
}
