package main

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// runOnce runs the command line to its end and returns what it printed.
func runOnce(t *testing.T, args ...string) string {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sharedconfig %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// heard collects the words said on a config's turns subject.
type heard struct {
	mu    sync.Mutex
	words []string
}

func listenToTurns(t *testing.T, nc *nats.Conn, scope, name string) *heard {
	t.Helper()
	h := &heard{}
	sub, err := nc.Subscribe(jetstream.Subject(scope, name)+".turns", func(m *nats.Msg) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.words = append(h.words, string(m.Data))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return h
}

// take returns the words heard so far, once every process that said them
// has ended and the server has passed them on, and forgets them.
func (h *heard) take(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	words := h.words
	h.words = nil
	return words
}

// Commands that only read say nothing to the config's writers: no hello,
// no subscription left to answer. A write does (so the listening works).
func TestReadOnlyCommandsSayNothingToWriters(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	args := func(more ...string) []string {
		return append([]string{"--server", srv.ClientURL(), "--scope", "quiet"}, more...)
	}
	runOnce(t, args("put", "k", "v")...)
	h := listenToTurns(t, nc, "quiet", "someConfig")
	for _, command := range [][]string{{"list"}, {"get", "k"}, {"get-all"}, {"export"}} {
		runOnce(t, args(command...)...)
		if words := h.take(t, nc); len(words) > 0 {
			t.Errorf("%s said %q to the writers", command[0], words)
		}
	}
	watch := startREPL(t, "watch", args("watch")...)
	untilLine(t, watch, "**** Watching every key")
	if err := watch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	watch.cmd.Wait()
	if words := h.take(t, nc); len(words) > 0 {
		t.Errorf("watch said %q to the writers", words)
	}
	runOnce(t, args("put", "k", "w")...)
	if words := h.take(t, nc); len(words) != 1 || !strings.HasPrefix(words[0], "hello ") {
		t.Errorf("a put said %q to the writers, want one hello", words)
	}
}
