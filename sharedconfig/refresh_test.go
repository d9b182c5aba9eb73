package sharedconfig_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A REFRESH with nothing pending is one request to the server, a get of the
// stream's last message, whose answer also says the stream is the one the
// copy was read from (its message id); a PUT by another process is still
// seen by the next REFRESH.
func TestRefreshWithNothingPendingIsOneRequest(t *testing.T) {
	e := newEnv(t)
	c, other := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	ctx := context.Background()
	if _, err := c.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	watcher := jstest.Connect(t, e.srv)
	// A channel subscription: the connection's reader puts each request in
	// the channel before it reads the answer to the Flush after Refresh.
	requests := make(chan *nats.Msg, 64)
	sub, err := watcher.ChanSubscribe("$JS.API.>", requests)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(requests) > 0 {
		got = append(got, (<-requests).Subject)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "$JS.API.DIRECT.GET.") {
		t.Fatalf("REFRESH with nothing pending made the requests %q; want one direct get", got)
	}
	if _, err := other.Put(ctx, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get("k"); v != "v2" {
		t.Fatalf("after another's PUT and a REFRESH, k = %q, want v2", v)
	}
}
