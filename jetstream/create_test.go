package jetstream_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// The server can fail to make a new stream's store for a moment, as right
// after a config of the same name was destroyed (it removes the old store
// in the background): creating the stream is tried again for a while, so
// a put right after a destroy lands.
func TestCreateOutlastsAStoreTheServerCannotMakeYet(t *testing.T) {
	dir := t.TempDir()
	srv := jstest.ServerAt(t, dir, "127.0.0.1:0")
	nc := jstest.Connect(t, srv)
	block := func(name string) string {
		path := filepath.Join(dir, "jetstream", "$G", "streams", jetstream.StreamName("test", name))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil { // a file where its directory goes
			t.Fatal(err)
		}
		return path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	path := block("brief")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.Remove(path)
	}()
	l, err := jetstream.OpenLog(ctx, nc, "test", "brief", jetstream.LogOptions{})
	if err != nil {
		t.Fatalf("a store the server could make 300 ms later: %v", err)
	}
	l.Close()

}
