package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// A full store is said at once, in one clear error, not retried until the
// timeout as "may or may not"; writes work again once space is freed,
// restarting nothing (Issue 11).
func TestOutOfStorage(t *testing.T) {
	srv := jstest.NATS(t, &server.Options{JetStream: true, JetStreamMaxStore: 64 << 10})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	js, _ := natsjs.New(nc)
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "OTHER", Subjects: []string{"other"}}); err != nil {
		t.Fatal(err)
	}
	value := []byte(strings.Repeat("v", 1000))
	for range 20 {
		if _, err := js.Publish(ctx, "other", value); err != nil {
			t.Fatal(err)
		}
	}
	l, err := jetstream.OpenLog(ctx, nc, "test", "full", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := fillUntilOutOfStorage(t, l, value)
	// A compaction needs room for its snapshot first: refused the same way.
	if _, err := logtest.Compact(l, ctx, last, []byte("snapshot")); !errors.Is(err, jetstream.ErrOutOfStorage) {
		t.Fatalf("Compact on a full store = %v; want ErrOutOfStorage", err)
	}
	if err := js.DeleteStream(ctx, "OTHER"); err != nil {
		t.Fatal(err)
	}
	if rev, err := logtest.Append(l, ctx, last, value); err != nil || rev != last+1 {
		t.Fatalf("Append after space was freed = %d, %v; want %d", rev, err, last+1)
	}
	if _, err := logtest.Compact(l, ctx, last+1, []byte("snapshot")); err != nil {
		t.Fatalf("Compact after space was freed: %v", err)
	}
}

// fillUntilOutOfStorage appends value until the store is full, checking that
// the refusal comes at once (one try) and says so; it returns the last
// revision written.
func fillUntilOutOfStorage(t *testing.T, l *jetstream.Log, value []byte) uint64 {
	var tries atomic.Int64
	l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			tries.Add(1)
			return publish(ctx, msg, opts...)
		}
	})
	ctx := context.Background()
	var last uint64
	for {
		if last > 1000 {
			t.Fatal("the store never filled")
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		before := tries.Load()
		rev, err := logtest.Append(l, wctx, last, value)
		cancel()
		if err == nil {
			last = rev
			continue
		}
		if !errors.Is(err, jetstream.ErrOutOfStorage) || errors.Is(err, statesync.ErrUnknownOutcome) {
			t.Fatalf("Append on a full store = %v; want ErrOutOfStorage", err)
		}
		if !strings.Contains(err.Error(), "the server is out of storage") {
			t.Fatalf("the error does not say what happened: %v", err)
		}
		if strings.Contains(err.Error(), "free space") {
			t.Fatalf("the log's error gives a user advice: %v", err)
		}
		if n := tries.Load() - before; n != 1 {
			t.Fatalf("%d tries on a full store, want 1: retrying only waits", n)
		}
		t.Logf("after %d entries: %v", last, err)
		return last
	}
}
