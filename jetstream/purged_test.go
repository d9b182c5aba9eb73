package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// A purge by hand that keeps the tail of a chunked snapshot leaves pieces
// that no reader can put together: the state the snapshot held is gone,
// and the log says so of the first piece left, not that it is damaged.
func TestPurgeInsideAChunkedSnapshot(t *testing.T) {
	srv := smallPayloadServer(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx := context.Background()
	if _, err := logtest.Append(l, ctx, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("s", int(nc.MaxPayload())*3/2)) // 3 chunks, at 2 to 4
	if at, err := logtest.Compact(l, ctx, 1, big); err != nil || at != 4 {
		t.Fatalf("Compact: %d, %v; want the snapshot's last chunk at 4", at, err)
	}
	if _, err := logtest.Append(l, ctx, 4, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := l.Stream().Purge(ctx, natsjs.WithPurgeSequence(3)); err != nil {
		t.Fatal(err)
	}
	err := logtest.Read(l, ctx, 0, 5, func(statesync.Entry) error { return nil })
	var entryErr *statesync.EntryError
	if !errors.Is(err, statesync.ErrStateGone) || !errors.As(err, &entryErr) || entryErr.Revision != 3 {
		t.Fatalf("reading a log purged inside a chunked snapshot: %v; want ErrStateGone at entry 3", err)
	}
}
