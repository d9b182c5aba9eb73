package jetstream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// A read of a stream deleted under it says so (statesync.ErrDeleted): the
// direct get nobody answers is a stream gone, not a server without
// JetStream.
func TestReadOfADeletedStreamSaysDeleted(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	ctx := context.Background()
	l := openLog(t, nc)
	defer l.Close()
	for range 2 {
		if _, err := l.AppendAfter(ctx, statesync.Position{Revision: statesync.AnyRevision}, []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	scope, name, _ := jetstream.ParseStreamName(l.Name())
	if err := jetstream.DeleteConfig(ctx, nc, scope, name); err != nil {
		t.Fatal(err)
	}
	err := l.ReadAfter(ctx, statesync.Position{}, 2, func(statesync.Entry) error { return nil })
	if !errors.Is(err, statesync.ErrDeleted) || errors.Is(err, jetstream.ErrNoJetStream) {
		t.Errorf("ReadAfter of a deleted stream: %v; want statesync.ErrDeleted", err)
	}
}
