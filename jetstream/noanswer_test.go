package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// A call whose time runs out is statesync.ErrNoAnswer only when the server
// said nothing: not when the time ran out on a server that answers (a
// write that kept losing to others runs out of time so), but when it
// hangs, or the connection is gone and cannot come back.
func TestNoAnswerIsToldFromTimeRunningOut(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	proxy := jstest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	nc := jstest.ConnectURL(t, proxy.URL())
	l := openLog(t, nc)
	last, err := logtest.Append(l, context.Background(), 0, []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(ctx context.Context) error{
		"append": func(ctx context.Context) error { _, err := logtest.Append(l, ctx, last, []byte("x")); return err },
		"read": func(ctx context.Context) error {
			return l.ReadAfter(ctx, statesync.Position{}, last, func(statesync.Entry) error { return nil })
		},
		"last": func(ctx context.Context) error { _, err := l.LastPosition(ctx); return err },
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		<-ctx.Done()
		if err := call(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, statesync.ErrNoAnswer) {
			t.Errorf("%s out of time, the server answering: %v; want the deadline, not ErrNoAnswer", name, err)
		}
		cancel()
	}
	answering := func() bool { return nc.FlushTimeout(time.Second) == nil }
	for _, c := range []struct {
		name string
		cut  bool
	}{{"append", false}, {"read", false}, {"last", false}, {"read", true}} {
		before := proxy.Dropped()
		proxy.Freeze()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- calls[c.name](ctx) }()
		if c.cut { // once the request is sent: a catch-up in flight
			proxy.WaitForDrop(t, before)
			proxy.Cut()
		}
		if err := <-done; !errors.Is(err, statesync.ErrNoAnswer) {
			t.Errorf("%s, the server hanging (cut %v): %v; want ErrNoAnswer", c.name, c.cut, err)
		}
		cancel()
		proxy.Thaw()
		waitUntil(t, "the client to reconnect", answering)
	}
}
