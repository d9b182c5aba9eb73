// Package jstest starts real embedded NATS servers for tests: each on a free
// loopback port with its own temporary store.
package jstest

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// Server starts a server that is shut down when the test ends.
func Server(t testing.TB) *jetstream.Server {
	t.Helper()
	return ServerAt(t, t.TempDir(), "127.0.0.1:0")
}

// ServerAt starts a server on listen with its store in dir, shut down when
// the test ends (or earlier, by the test).
func ServerAt(t testing.TB, dir, listen string) *jetstream.Server {
	t.Helper()
	s, err := jetstream.StartServer(jetstream.ServerOptions{Listen: listen, DataDir: dir})
	if err != nil {
		t.Fatalf("starting the test server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Connect opens a connection to s, closed when the test ends.
func Connect(t testing.TB, s *jetstream.Server) *nats.Conn {
	t.Helper()
	nc, err := jetstream.Connect(jetstream.ConnectOptions{URLs: s.ClientURL()})
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
