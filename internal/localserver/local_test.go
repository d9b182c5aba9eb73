package localserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// syncBuffer is a log a server writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startPrivate(t *testing.T, dir string, log io.Writer) *localserver.Server {
	t.Helper()
	s, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir, Private: true, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// A private server admits its owner's clients, which hold the keys in its
// data directory, and no one else; what it refuses reaches its log.
func TestPrivateServer(t *testing.T) {
	dir := t.TempDir()
	var log syncBuffer
	s := startPrivate(t, dir, &log)
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), LocalDataDir: dir})
	if err != nil {
		t.Fatalf("the owner's client: %v", err)
	}
	defer nc.Close()
	if _, err := jetstream.OpenLog(context.Background(), nc, "local", "cfg", jetstream.LogOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"local-tls.pem", "local-user.nk", "server.pid"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}

	// Without the keys: no TLS at all, then TLS without the NKey.
	if _, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), Timeout: time.Second}); err == nil {
		t.Fatal("a client without TLS connected")
	}
	_, err = nats.Connect(s.ClientURL(), nats.Secure(&tls.Config{InsecureSkipVerify: true}), nats.TLSHandshakeFirst())
	if err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("a client with TLS but no key: %v", err)
	}
	// A client of another data directory does not trust this server.
	if _, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), LocalDataDir: t.TempDir(), Timeout: time.Second}); err == nil {
		t.Fatal("a client of another data directory connected")
	}
	waitFor(t, "the refusals in the server's log", func() bool {
		return strings.Contains(log.String(), "[ERR]") && strings.Contains(log.String(), "authentication error")
	}, log.String)
}

// A client of a private server sends nothing but a TLS hello to whatever
// else listens on the port: not its key, not a CONNECT.
func TestPrivateClientRefusesImpostor(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.Write([]byte("INFO {\"server_id\":\"fake\",\"max_payload\":1048576}\r\n"))
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b, _ := io.ReadAll(c)
		got <- b
	}()
	defer l.Close()
	_, err = localserver.Connect(localserver.ConnectOptions{URLs: "nats://" + l.Addr().String(), LocalDataDir: dir, Timeout: time.Second})
	if err == nil {
		t.Fatal("connected to a plain listener")
	}
	b := <-got
	seed, err := os.ReadFile(filepath.Join(dir, "local-user.nk"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("CONNECT")) || bytes.Contains(b, seed) || len(b) > 0 && b[0] != 0x16 {
		t.Fatalf("the impostor received %q", b)
	}

	// A plain nats-server, and a private one on another data directory.
	plain := jstest.NATS(t, &server.Options{JetStream: true})
	if _, err := localserver.Connect(localserver.ConnectOptions{URLs: plain.ClientURL(), LocalDataDir: dir, Timeout: time.Second}); err == nil {
		t.Fatal("connected to a plain nats-server")
	}
	other := startPrivate(t, t.TempDir(), nil)
	if _, err := localserver.Connect(localserver.ConnectOptions{URLs: other.ClientURL(), LocalDataDir: dir, Timeout: time.Second}); err == nil {
		t.Fatal("connected to a private server of another data directory")
	}
}

// The lock is on the directory itself: deleting every file in it does not
// let a second server in.
func TestDataDirLockSurvivesDeletion(t *testing.T) {
	dir := t.TempDir()
	jstest.ServerAt(t, dir, "127.0.0.1:0")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	s, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir})
	if err == nil {
		s.Shutdown()
		t.Fatal("a second server started on the same directory")
	}
	if !errors.Is(err, localserver.ErrDataDirLocked) {
		t.Fatalf("got %v, want ErrDataDirLocked", err)
	}
}

// A data directory someone else controls is refused: one owned by another
// user, a symbolic link, one others can write in (for a private server),
// and keys others can read.
func TestUnsafeDataDirs(t *testing.T) {
	start := func(dir string, private bool) error {
		s, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir, Private: private})
		if err == nil {
			s.Shutdown()
		}
		return err
	}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, localserver.ErrUnsafeDataDir) {
			t.Errorf("%s: got %v, want ErrUnsafeDataDir", what, err)
		}
	}
	real := filepath.Join(t.TempDir(), "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want("a symbolic link", start(link, false))

	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	want("a world-writable directory", start(shared, true))

	readable := t.TempDir()
	if err := start(readable, true); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(readable, "local-user.nk"), 0o644); err != nil {
		t.Fatal(err)
	}
	want("a readable seed", start(readable, true))

	foreign := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, os.Geteuid()+12345, -1); err != nil {
		t.Skipf("cannot give a directory to another user (not root): %v", err)
	}
	want("a directory of another user", start(foreign, false))
	// A pid file of another user, in a directory of ours.
	mine := t.TempDir()
	if err := os.WriteFile(filepath.Join(mine, "server.pid"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(mine, "server.pid"), os.Geteuid()+12345, -1); err != nil {
		t.Fatal(err)
	}
	want("a pid file of another user", start(mine, false))
}

func waitFor(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s; got:\n%s", what, state())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
