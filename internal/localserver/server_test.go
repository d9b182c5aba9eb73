package localserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// A sync interval that is negative or shorter than a millisecond is refused
// at start: nats-server would panic on the first stream it stores.
func TestServerRefusesBadSyncInterval(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Nanosecond, time.Microsecond} {
		srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir(), SyncInterval: d})
		if err == nil {
			srv.Shutdown()
			t.Errorf("sync interval %s: the server started", d)
			continue
		}
		if !strings.Contains(err.Error(), "sync interval") {
			t.Errorf("sync interval %s: %v; want an error naming the sync interval", d, err)
		}
	}
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir(), SyncInterval: time.Millisecond})
	if err != nil {
		t.Fatalf("sync interval 1ms: %v", err)
	}
	srv.Shutdown()
}
