package main

import (
	"fmt"
	"net"
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
	c := programCommand(args...)
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
	t.Parallel()
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

// startServerProcess runs "sharedconfig server" in a process of its own,
// which the test can stop with SIGSTOP, and returns its URL.
func startServerProcess(t *testing.T) (string, *os.Process) {
	t.Helper()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	return "nats://" + listen, startServerProcessAt(t, listen, t.TempDir()).Process
}

// startServerProcessAt runs "sharedconfig server" on listen with its store
// in dir, once it answers there.
func startServerProcessAt(t *testing.T, listen, dir string) *exec.Cmd {
	t.Helper()
	c := programCommand("server", "--listen", listen, "--data-dir", dir)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Signal(syscall.SIGCONT)
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	deadline := time.Now().Add(patience)
	for {
		conn, err := net.Dial("tcp", listen)
		if err == nil {
			conn.Close()
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server on %s did not start: %v", listen, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopProcess ends c with SIGTERM and waits until it is gone.
func stopProcess(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		c.Wait()
	}()
	select {
	case <-ended:
	case <-time.After(patience):
		t.Fatalf("process %d did not end", c.Process.Pid)
	}
}

// A shell's PUT while its server is down fails at once, saying nothing was
// changed, and does not land when the server comes back on the same port
// and store: nothing is sent behind the user's back.
func noWriteBehindTheUsersBack(t *testing.T) {
	listen, dir := fmt.Sprintf("127.0.0.1:%d", freePort(t)), t.TempDir()
	server := startServerProcessAt(t, listen, dir)
	args := []string{"--server", "nats://" + listen, "--scope", "late", "--timeout", "3s"}
	sh := startREPL(t, "shell", args...)
	sh.wantExit = 1 // a line failed
	sh.send("PUT early, 1")
	sh.expect("**** Property 'early' added with value '1'")
	stopProcess(t, server)
	// A server that stops closes its connections: the client knows at once
	// (a write sent before it knew would be a true unknown outcome).
	time.Sleep(time.Second)
	start := time.Now()
	sh.send("PUT late, 1")
	line := sh.next()
	if !strings.HasPrefix(line, "!!!! line 2: Error: ") || !strings.HasSuffix(line, "nothing was changed") {
		t.Errorf("the PUT while the server is down printed %q, want an error that says nothing was changed", line)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the PUT while the server is down took %s, want it refused at once", took.Round(time.Millisecond))
	}
	startServerProcessAt(t, listen, dir)
	// Writes fail at once until the shell has reconnected, then land.
	deadline := time.Now().Add(patience)
	for {
		sh.send("PUT after, 2")
		if strings.Contains(sh.next(), "added with value '2'") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no PUT landed after the server came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
	sh.send("QUIT")
	out := runOnce(t, append(args, "get-all")...)
	if strings.Contains(out, "late") || !strings.Contains(out, "after") {
		t.Fatalf("after the server came back the config holds:\n%s\nwant 'after' and no 'late'", out)
	}
}

// noRaceExitSleep is the environment of a process whose exit is timed
// (TestMain sets the same for every process; the timing tests say so
// where they time an exit).
func noRaceExitSleep() []string { return []string{"GORACE=" + raceWithoutExitSleep()} }

// QUIT, Ctrl-D (in a terminal), the end of input and SIGTERM end a process
// within 2s while its server hangs (SIGSTOP): shells that follow the config
// and hold a lease whose keeper is waiting for the server, a watch, and a
// member holding its key.
func exitIsQuickWhenTheServerHangs(t *testing.T) {
	url, server := startServerProcess(t)
	args := func(writer string, more ...string) []string {
		return append([]string{"--server", url, "--scope", "hang", "--writer", writer}, more...)
	}
	var shells []*repl
	for _, name := range []string{"quit", "eof", "term"} {
		r := startREPLEnv(t, name, noRaceExitSleep(), args(name, "--follow")...)
		r.wantExit = -1
		r.send("REGISTER_LEASE " + name + ", 3s")
		untilLine(t, r, "**** Lease '"+name+"' registered")
		r.send("PUT_WITH_LEASE /" + name + ", up, " + name)
		untilLine(t, r, "under lease '"+name+"'")
		shells = append(shells, r)
	}
	watch := startREPLEnv(t, "watch", noRaceExitSleep(), args("watcher", "watch")...)
	watch.wantExit = -1
	untilLine(t, watch, "**** Watching every key")
	member := startREPLEnv(t, "member", noRaceExitSleep(), args("member", "member", "/member", "up", "--ttl", "3s")...)
	member.wantExit = -1
	untilLine(t, watch, "/member")
	// Ctrl-D in a terminal.
	tty := startPTYEnv(t, noRaceExitSleep(), args("tty", "--follow")...)
	tty.waitFor("someConfig > ", 1)
	tty.paste("REGISTER_LEASE tty, 3s\r")
	tty.waitFor("**** Lease 'tty' registered", 1)
	if err := server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The keepers refresh every second (a third of the ttl), and the leases
	// fall due for the watch within the ttl: now their writes wait for the
	// server, holding the config.
	time.Sleep(3500 * time.Millisecond)

	ends := map[string]func(*repl){
		"quit":   func(r *repl) { r.send("QUIT") },
		"eof":    func(r *repl) { r.stdin.Close() },
		"term":   func(r *repl) { r.cmd.Process.Signal(syscall.SIGTERM) },
		"watch":  func(r *repl) { r.cmd.Process.Signal(syscall.SIGTERM) },
		"member": func(r *repl) { r.cmd.Process.Signal(syscall.SIGTERM) },
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		endsWithin2s(t, "the terminal's shell (Ctrl-D)", func() { tty.paste("\x04") }, func() { tty.wait() })
	})
	for _, r := range append(shells, watch, member) {
		wg.Go(func() { endsWithin2s(t, r.name, func() { ends[r.name](r) }, func() { r.cmd.Wait() }) })
	}
	wg.Wait()
}

// endsWithin2s tells a process to end, waits for it, and fails the test if
// that took more than 2s.
func endsWithin2s(t *testing.T, name string, end, wait func()) {
	start := time.Now()
	end()
	wait()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("%s ended %s after it was told to, want within 2s", name, took.Round(time.Millisecond))
	} else {
		t.Logf("%s ended in %s", name, took.Round(time.Millisecond))
	}
}

// SIGTERM ends a process within 2s while it is still connecting to a server
// that took the connection and says nothing (SIGSTOP): a one-shot get and
// a watch given a long --timeout waited it out.
func startIsStoppableWhenTheServerHangs(t *testing.T) {
	url, server := startServerProcess(t)
	if err := server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, args := range [][]string{{"get", "k"}, {"watch"}} {
		c := programCommand(append([]string{"--server", url, "--timeout", "30s"}, args...)...)
		c.Env = append(c.Env, noRaceExitSleep()...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill() })
		wg.Go(func() {
			time.Sleep(time.Second) // it is connecting
			endsWithin2s(t, args[0]+" while connecting", func() { c.Process.Signal(syscall.SIGTERM) }, func() { c.Wait() })
		})
	}
	wg.Wait()
}
