package localserver_test

import (
	"net"
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

// A port another process listens on is refused at once, with nats-server's
// reason: the failure to listen is not waited out as a slow start.
func TestServerOnATakenPortFailsAtOnce(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	start := time.Now()
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: taken.Addr().String(), DataDir: t.TempDir()})
	took := time.Since(start)
	if err == nil {
		srv.Shutdown()
		t.Fatalf("the server started on %s, which another listener holds", taken.Addr())
	}
	if !strings.Contains(err.Error(), "address already in use") || took > 2*time.Second {
		t.Errorf("after %v: %v; want at once an error saying the address is in use", took.Round(time.Millisecond), err)
	}
}

// A server started again on the same data directory goes by the same name,
// which clients see (the replica cache keys its files by it); one on
// another directory by another.
func TestServerNameIsTheDataDirectorys(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	var names []string
	for _, d := range []string{dir, dir, other} {
		srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: d})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, srv.Name())
		srv.Shutdown()
	}
	if names[0] != names[1] || names[0] == names[2] {
		t.Errorf("server names %q: want the first two (one data directory) the same, the third another", names)
	}
}
