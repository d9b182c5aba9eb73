package jetstream_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// A chunked snapshot ends in a small chunk, the message a reader's
// LastPosition fetches whole until the next write; it reads back whole.
func TestChunkedSnapshotEndsInASmallChunk(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx := context.Background()
	if _, err := logtest.Append(l, ctx, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("0123456789", int(nc.MaxPayload())*5/20)) // 2.5 max payloads
	rev, err := logtest.Compact(l, ctx, 1, big)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.Stream().GetLastMsgForSubject(ctx, l.Stream().CachedInfo().Config.Subjects[0])
	if err != nil {
		t.Fatal(err)
	}
	if last.Sequence != rev || len(last.Data) > 4096 {
		t.Fatalf("the snapshot's last chunk: %d bytes at %d (the snapshot ends at %d); want at most 4 KiB", len(last.Data), last.Sequence, rev)
	}
	var got []byte
	err = l.ReadAfter(ctx, statesync.Position{}, rev, func(e statesync.Entry) error {
		if e.Snapshot {
			got = e.Data
		}
		return nil
	})
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes of the %d-byte snapshot, %v", len(got), len(big), err)
	}
}
