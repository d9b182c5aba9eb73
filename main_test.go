package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// A server that goes away mid-session: commands fail with one line each, the
// shell stays up, and commands work again once the server is back.
func TestServerGoesAway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown() }()
	listen := strings.TrimPrefix(srv.ClientURL(), "nats://")
	p := startREPL(t, "p", "--server", srv.ClientURL(), "--timeout", "1s")
	p.wantExit = 1 // some lines failed
	p.send("PUT a, 1")
	p.expect("**** Property 'a' added with value '1'")
	srv.Shutdown()
	p.send("REFRESH")
	p.expectPrefix("!!!! line 2: Error: no answer from the server within 1s")
	p.send("GET a")
	p.expect("**** The value of property 'a' is '1'")
	srv, err = localserver.StartServer(localserver.ServerOptions{Listen: listen, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.send("PUT b, 2")
		got := p.next()
		if got == "**** Property 'b' added with value '2'" {
			p.send("QUIT")
			p.expect("**** Exiting...")
			return
		}
		if !strings.Contains(got, ": Error: ") || time.Now().After(deadline) {
			t.Fatalf("after the server came back: %q", got)
		}
	}
}

// TestWalkthrough runs the original documentation's two-process walkthrough
// with two processes on one server.
func TestWalkthrough(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "walkthrough"}
	p1, p2 := startREPL(t, "p1", args...), startREPL(t, "p2", args...)

	p1.send("GET_ALL")
	p1.expect("**** Properties for SharedConfig: 'someConfig' :")
	p2.send("GET_ALL")
	p2.expect("**** Properties for SharedConfig: 'someConfig' :")
	p1.send("PUT p1,v1")
	p1.expect("**** Property 'p1' added with value 'v1'")
	p1.send("GET p1")
	p1.expect("**** The value of property 'p1' is 'v1'")
	p2.send("GET p1")
	p2.expect("!!!! Property 'p1' is undefined")
	p2.send("REFRESH")
	p2.expect("**** Properties refreshed")
	p2.send("GET p1")
	p2.expect("**** The value of property 'p1' is 'v1'")
	p2.send("REPLACE p1, newVal, v1")
	p2.expect("**** Property 'p1' had value 'v1', now replaced with new value 'newVal'")
	p2.send("GET p1")
	p2.expect("**** The value of property 'p1' is 'newVal'")
	p1.send("REPLACE p1, anotherVal, v1")
	p1.expect("!!!! Property 'p1' was NOT replaced -- current value did not match given value 'v1'")
	p1.send("GET p1")
	p1.expect("**** The value of property 'p1' is 'newVal'")
	// The stale-copy cases the original got wrong.
	p2.send("PUT p2, x")
	p2.expect("**** Property 'p2' added with value 'x'")
	p1.send("REMOVE p2")
	p1.expect("**** Property 'p2' is removed -- old value was 'x'")
	p2.send("PUT_IF_ABSENT p1, mine")
	p2.expect("**** Property 'p1' exists with value 'newVal'")
	p2.send("CLEAR")
	p2.expect("**** All properties removed")
	p1.send("REFRESH")
	p1.expect("**** Properties refreshed")
	p1.send("GET p1")
	p1.expect("!!!! Property 'p1' is undefined")
	p1.send("QUIT")
	p1.expect("**** Exiting...")
	p2.send("QUIT")
	p2.expect("**** Exiting...")
}

// With the local server started by the first shell, closing that shell does
// not disturb the second: its next command works at once.
func TestClosingFirstShellKeepsSecond(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	env := []string{"NATS_URL=", "SHAREDCONFIG_LOCAL_PORT=" + strconv.Itoa(freePort(t)), "XDG_DATA_HOME=" + data}
	p1 := startREPLEnv(t, "p1", env)
	p1.expectPrefix("sharedconfig: started a local server on 127.0.0.1:")
	p1.send("PUT k, from p1")
	p1.expect("**** Property 'k' added with value 'from p1'")
	p2 := startREPLEnv(t, "p2", env)
	p2.send("GET k")
	p2.expect("**** The value of property 'k' is 'from p1'")
	p1.send("QUIT")
	p1.expect("**** Exiting...")
	p1.cmd.Wait()
	p2.send("PUT k, from p2")
	p2.expect("**** Property 'k' updated from: 'from p1' to: 'from p2'")
	p2.send("QUIT")
	p2.expect("**** Exiting...")
	// Stop the background server this test started.
	t.Cleanup(func() { stopServerOf(t, filepath.Join(data, "sharedconfig")) })
}

// When the local server dies (kill -9), the shells still running start a new
// one on the same data directory, as a new shell would, and go on: each
// sees the other's writes.
func TestSurvivorsRestartLocalServer(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	dir := filepath.Join(data, "sharedconfig")
	env := []string{"NATS_URL=", "SHAREDCONFIG_LOCAL_PORT=" + strconv.Itoa(freePort(t)), "XDG_DATA_HOME=" + data}
	p1 := startREPLEnv(t, "p1", env, "--timeout", "1s")
	p1.wantExit = -1 // whether a command fails depends on how soon a server is back
	p1.expectPrefix("sharedconfig: started a local server on 127.0.0.1:")
	t.Cleanup(func() { stopServerOf(t, dir) })
	p1.send("PUT k, 1")
	p1.expect("**** Property 'k' added with value '1'")
	p2 := startREPLEnv(t, "p2", env, "--timeout", "1s")
	p2.wantExit = -1 // whether a command fails depends on when it reconnects
	p2.send("GET k")
	p2.expect("**** The value of property 'k' is '1'")

	first := localserver.ServerPID(dir)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	key := untilAdded(t, p1, "from-p1")
	if localserver.ServerPID(dir) == first {
		t.Fatal("the server that answered is the one killed")
	}
	untilRefreshed(t, p2)
	p2.send("GET " + key)
	p2.expect("**** The value of property '" + key + "' is 'from-p1'")
	key = untilAdded(t, p2, "from-p2")
	untilRefreshed(t, p1)
	p1.send("GET " + key)
	p1.expect("**** The value of property '" + key + "' is 'from-p2'")
	p1.send("QUIT")
	p1.expect("**** Exiting...")
	p2.send("QUIT")
	p2.expect("**** Exiting...")
}

// sharedconfig server writes the embedded server's warnings and errors to
// stderr (server.log, for the auto-started one): here, a client refused by
// a private server.
func TestServerLogsErrors(t *testing.T) {
	t.Parallel()
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	srv := startREPL(t, "server", "server", "--private", "--listen", listen, "--data-dir", t.TempDir())
	t.Cleanup(func() { srv.cmd.Process.Signal(syscall.SIGTERM) })
	for line := srv.next(); !strings.HasPrefix(line, "sharedconfig server: listening on tls://"+listen); line = srv.next() {
	}
	if nc, err := nats.Connect("nats://"+listen, nats.Timeout(time.Second)); err == nil {
		nc.Close()
		t.Fatal("a client without the keys connected")
	}
	for line := srv.next(); !strings.Contains(line, "[ERR]"); line = srv.next() {
	}
}
