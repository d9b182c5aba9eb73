package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/sharedconfig/sharedconfig/cmd"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// runMain is the sharedconfig binary inside the test binary: testscript
// runs it as the command "sharedconfig", and the Go tests below as a
// process of their own.
func runMain() int { return cmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr) }

const runMainEnv = "SHAREDCONFIG_TEST_RUN_MAIN"

// patience is how long a test waits for a process to print or exit before
// it fails: generous, since a loaded machine can be slow, and a passing test
// never waits it out.
const patience = time.Minute

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(runMain())
	}
	testscript.Main(leakChecked{m}, map[string]func(){"sharedconfig": func() { os.Exit(runMain()) }})
}

// leakChecked fails the run if the tests leave goroutines behind.
type leakChecked struct{ m *testing.M }

func (l leakChecked) Run() int {
	code := l.m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// TestScripts runs testdata/script/*.txtar. Each script gets its own server,
// reachable through NATS_URL (and $SERVER), and a free port in $FREEPORT for
// scripts that start servers of their own.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: filepath.Join(env.WorkDir, ".server")})
			if err != nil {
				return err
			}
			env.Defer(srv.Shutdown)
			env.Setenv("NATS_URL", srv.ClientURL())
			env.Setenv("SERVER", srv.ClientURL())
			env.Setenv("FREEPORT", strconv.Itoa(freePort(env.T())))
			env.Setenv("XDG_DATA_HOME", filepath.Join(env.WorkDir, ".data"))
			env.Values[replsKey{}] = map[string]*scriptShell{}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"stoplocal": stopLocal,
			"waitport":  waitPort,
			"repl":      scriptREPL,
			"send":      scriptSend,
			"expect":    scriptExpect,
			"close":     scriptClose,
			"term":      scriptTerm,
			"publish":   scriptPublish,
		},
	})
}

func freePort(t interface{ Fatal(...any) }) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// stoplocal DIR: stops the server whose pid is in DIR/server.pid and waits
// until it has exited.
func stopLocal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stoplocal DIR")
	}
	pid := localserver.ServerPID(ts.MkAbs(args[0]))
	if pid == 0 {
		ts.Fatalf("no server pid in %s", args[0])
	}
	ts.Check(syscall.Kill(pid, syscall.SIGTERM))
	for range 100 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("server %d did not stop", pid)
}

// waitport [!] PORT: waits until something listens on 127.0.0.1:PORT (or,
// with !, until nothing does).
func waitPort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitport PORT")
	}
	for range 100 {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+args[0], time.Second)
		if c != nil {
			c.Close()
		}
		if (err == nil) != neg {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("port %s: still not in the wanted state", args[0])
}

// repl is a sharedconfig process driven through pipes, as a user in a
// terminal would drive it (stdin is not a terminal, so no prompt).
type repl struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	// wantExit is the exit status the test expects at the end; -1: any.
	wantExit int
}

func startREPL(t *testing.T, name string, args ...string) *repl {
	t.Helper()
	return startREPLEnv(t, name, nil, args...)
}

// startREPLEnv starts a shell with env added to the test's environment.
func startREPLEnv(t *testing.T, name string, env []string, args ...string) *repl {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r := &repl{t: t, name: name, cmd: c, stdin: stdin, lines: make(chan string, 100)}
	go func() {
		defer close(r.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			r.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		c.Wait()
		if code := c.ProcessState.ExitCode(); r.wantExit >= 0 && code != r.wantExit {
			t.Errorf("%s exited with status %d, want %d", name, code, r.wantExit)
		}
	})
	return r
}

func (r *repl) send(line string) {
	r.t.Helper()
	if _, err := fmt.Fprintln(r.stdin, line); err != nil {
		r.t.Fatalf("%s: %v", r.name, err)
	}
}

// next waits for the next line of output.
func (r *repl) next() string {
	r.t.Helper()
	select {
	case got, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("%s exited", r.name)
		}
		return got
	case <-time.After(patience):
		r.t.Fatalf("%s printed nothing for %s", r.name, patience)
		return ""
	}
}

// expect checks that the next line is want.
func (r *repl) expect(want string) {
	r.t.Helper()
	if got := r.next(); got != want {
		r.t.Fatalf("%s printed %q, want %q", r.name, got, want)
	}
}

// expectPrefix checks that the next line starts with prefix.
func (r *repl) expectPrefix(prefix string) {
	r.t.Helper()
	if got := r.next(); !strings.HasPrefix(got, prefix) {
		r.t.Fatalf("%s printed %q, want a line starting %q", r.name, got, prefix)
	}
}

// A server that goes away mid-session: commands fail with one line each, the
// shell stays up, and commands work again once the server is back.
func TestServerGoesAway(t *testing.T) {
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

// untilAdded puts value under a new key until a put succeeds (each failed
// try may still land later, so no key is tried twice), and returns the key.
func untilAdded(t *testing.T, r *repl, value string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		key := fmt.Sprintf("%s-%d", value, i)
		r.send("PUT " + key + ", " + value)
		got := r.next()
		if got == "**** Property '"+key+"' added with value '"+value+"'" {
			return key
		}
		if !failedLine.MatchString(got) || time.Now().After(deadline) {
			t.Fatalf("%s, waiting for the server to come back: %q", r.name, got)
		}
	}
}

// failedLine is the line of a script command that failed.
var failedLine = regexp.MustCompile(`^!!!! line \d+: Error: `)

// untilRefreshed refreshes until the shell reaches the server again.
func untilRefreshed(t *testing.T, r *repl) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.send("REFRESH")
		got := r.next()
		if got == "**** Properties refreshed" {
			return
		}
		if !failedLine.MatchString(got) || time.Now().After(deadline) {
			t.Fatalf("%s, waiting for the server to come back: %q", r.name, got)
		}
	}
}

// stopServerOf stops the background server on a data directory.
func stopServerOf(t *testing.T, dir string) {
	pid := localserver.ServerPID(dir)
	if pid == 0 {
		t.Errorf("no server pid in %s", dir)
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	// Wait for it to be gone: it is not this test's child, and until it
	// has stopped it writes in the data directory that the test's
	// cleanup removes next.
	deadline := time.Now().Add(patience)
	for running(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the local server (pid %d) did not stop within %s of SIGTERM", pid, patience)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running: process pid exists and is not a zombie (one that has exited and
// waits for its parent to reap it writes nothing).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // not Linux: trust the signal
	}
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// Background shells in scripts:
//
//	repl NAME ARGS...   start sharedconfig ARGS with a pipe for its stdin
//	send NAME LINE      type LINE into it
//	expect NAME TEXT    wait until it prints a line containing TEXT
//	close NAME [CODE]   end its input and wait for it to exit with CODE (0)
//	term NAME [CODE]    send it SIGTERM and wait likewise
//
// close and term leave all it printed in NAME.out.
// The environment is the script's ($NATS_URL and so on).
type replsKey struct{}

type scriptShell struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	seen  []string // every line printed, for failure messages
}

func shells(ts *testscript.TestScript) map[string]*scriptShell {
	return ts.Value(replsKey{}).(map[string]*scriptShell)
}

func scriptREPL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: repl NAME ARGS...")
	}
	c := exec.Command(os.Args[0], args[1:]...)
	c.Dir = ts.Getenv("WORK")
	c.Env = append(scriptEnv(ts), runMainEnv+"=1")
	stdin, err := c.StdinPipe()
	ts.Check(err)
	stdout, err := c.StdoutPipe()
	ts.Check(err)
	c.Stderr = c.Stdout
	ts.Check(c.Start())
	sh := &scriptShell{cmd: c, stdin: stdin, lines: make(chan string, 1000)}
	go func() {
		defer close(sh.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			sh.lines <- s.Text()
		}
	}()
	shells(ts)[args[0]] = sh
	ts.Defer(func() {
		c.Process.Kill()
		c.Wait()
	})
}

// scriptEnv is the script's environment, for a process the script starts.
func scriptEnv(ts *testscript.TestScript) []string {
	env := os.Environ()
	for _, k := range []string{"NATS_URL", "SERVER", "WORK", "XDG_DATA_HOME", "SHAREDCONFIG_LOCAL_PORT", "HOME"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

func shellNamed(ts *testscript.TestScript, name string) *scriptShell {
	sh := shells(ts)[name]
	if sh == nil {
		ts.Fatalf("no shell named %s (start it with repl)", name)
	}
	return sh
}

func scriptSend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: send NAME LINE")
	}
	_, err := fmt.Fprintln(shellNamed(ts, args[0]).stdin, args[1])
	ts.Check(err)
}

func scriptExpect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expect NAME TEXT")
	}
	sh := shellNamed(ts, args[0])
	timeout := time.After(patience)
	for {
		select {
		case line, ok := <-sh.lines:
			if !ok {
				ts.Fatalf("%s exited without printing %q; it printed:\n%s", args[0], args[1], strings.Join(sh.seen, "\n"))
			}
			sh.seen = append(sh.seen, line)
			ts.Logf("%s: %s", args[0], line)
			if strings.Contains(line, args[1]) {
				return
			}
		case <-timeout:
			ts.Fatalf("%s did not print %q within %s; it printed:\n%s", args[0], args[1], patience, strings.Join(sh.seen, "\n"))
		}
	}
}

func scriptClose(ts *testscript.TestScript, neg bool, args []string) {
	endShell(ts, neg, args, "close", func(sh *scriptShell) { sh.stdin.Close() })
}

// term NAME [EXIT-CODE]: sends SIGTERM to a process started with repl,
// checks how it exits (default 0), and leaves all it printed in the file
// NAME.out for the script to check.
func scriptTerm(ts *testscript.TestScript, neg bool, args []string) {
	endShell(ts, neg, args, "term", func(sh *scriptShell) { ts.Check(sh.cmd.Process.Signal(syscall.SIGTERM)) })
}

// endShell serves "close" and "term": it ends the shell named args[0] as
// end says, reads all it prints until it exits (so that it can finish
// writing), leaves that in NAME.out and checks its exit status (args[1],
// default 0).
func endShell(ts *testscript.TestScript, neg bool, args []string, word string, end func(*scriptShell)) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: %s NAME [EXIT-CODE]", word)
	}
	sh := shellNamed(ts, args[0])
	want := 0
	if len(args) == 2 {
		var err error
		want, err = strconv.Atoi(args[1])
		ts.Check(err)
	}
	end(sh)
	for line := range sh.lines {
		sh.seen = append(sh.seen, line)
		ts.Logf("%s: %s", args[0], line)
	}
	sh.cmd.Wait()
	ts.Check(os.WriteFile(ts.MkAbs(args[0]+".out"), []byte(strings.Join(sh.seen, "\n")+"\n"), 0o644))
	if got := sh.cmd.ProcessState.ExitCode(); got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[0], got, want)
	}
}

// publish SUBJECT BODY [HEADER=VALUE...]: stores one message in the stream
// that listens on SUBJECT, as another program would.
func scriptPublish(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: publish SUBJECT BODY [HEADER=VALUE...]")
	}
	nc, err := nats.Connect(ts.Getenv("NATS_URL"))
	ts.Check(err)
	defer nc.Close()
	msg := nats.NewMsg(args[0])
	msg.Data = []byte(args[1])
	for _, h := range args[2:] {
		k, v, ok := strings.Cut(h, "=")
		if !ok {
			ts.Fatalf("publish: header %q is not NAME=VALUE", h)
		}
		msg.Header.Set(k, v)
	}
	// A JetStream publish, to know the stream holds it when this returns.
	js, err := natsjs.New(nc)
	ts.Check(err)
	_, err = js.PublishMsg(context.Background(), msg)
	ts.Check(err)
}
