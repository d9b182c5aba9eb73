// What the process-level tests at the root share: the sharedconfig binary
// (the test binary run again as the program), free ports and servers, and
// driving a shell through pipes (repl) or as one-shot runs (runShell). The
// pseudo-terminal driver is in process_pty_test.go, the testscript commands
// in scripts_test.go.

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/sharedconfig/sharedconfig/cmd"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
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
	testmain.SkipRaceExitSleep()
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(runMain())
	}
	testscript.Main(leakChecked{m}, map[string]func(){"sharedconfig": func() { os.Exit(runMain()) }})
}

// programEnv names the sharedconfig binary the process-level tests run,
// set by the first test process so that the processes it starts, which
// run TestMain again, do not build it again.
const programEnv = "SHAREDCONFIG_TEST_PROGRAM"

// program is the path of the sharedconfig binary the tests run: a plain
// build, not a -race one. The root tests start hundreds of processes, and a
// race-instrumented one costs about three times the CPU to start and runs
// several times slower; the library code they run is raced in-process by
// the packages' own tests. When no binary can be built, the test binary
// runs as the program.
func program() string {
	if p := os.Getenv(programEnv); p != "" {
		return p
	}
	return os.Args[0]
}

// programCommand is exec.Command for the sharedconfig program, in the
// test's environment.
func programCommand(args ...string) *exec.Cmd {
	c := exec.Command(program(), args...)
	c.Env = append(os.Environ(), runMainEnv+"=1")
	return c
}

// buildProgram builds the sharedconfig binary into dir and names it in
// programEnv, unless a test process above this one has. It builds on one
// CPU: with a cold cache the build takes a while, and the other packages'
// tests, some of them timed, run meanwhile.
func buildProgram(dir string) {
	if os.Getenv(programEnv) != "" {
		return
	}
	bin := filepath.Join(dir, "bin", "sharedconfig")
	build := exec.Command("go", "build", "-p", "1", "-o", bin, ".")
	// Static: each of the hundreds of processes is spared the dynamic
	// loader, and the binary is the same whether or not the machine has a C
	// compiler. The program uses cgo for nothing of its own.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building a plain sharedconfig binary failed, so the test binary runs as the program: %v\n%s", err, out)
		return
	}
	os.Setenv(programEnv, bin)
}

// leakChecked fails the run if the tests leave goroutines behind.
type leakChecked struct{ m *testing.M }

func (l leakChecked) Run() int {
	// Shells on a terminal keep a history file, and every process a copy
	// of its config in the replica cache: the tests' go to directories of
	// their own, not the user's.
	state, err := os.MkdirTemp("", "sharedconfig-test-state")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)
	// Before XDG_CACHE_HOME changes: go build finds its cache there.
	buildProgram(state)
	os.Setenv("XDG_STATE_HOME", state)
	os.Setenv("XDG_CACHE_HOME", filepath.Join(state, "cache"))
	jstest.MoreInParallel()
	code := l.m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// raceWithoutExitSleep is GORACE as given, with no sleep at exit.
func raceWithoutExitSleep() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

func freePort(t interface{ Fatal(...any) }) int {
	ports, err := localserver.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
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
	c := programCommand(args...)
	c.Env = append(c.Env, env...)
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

// membershipServer starts a server for the test and returns the arguments
// of a process on it that writes as writer.
func membershipServer(t *testing.T) func(writer string, more ...string) []string {
	t.Helper()
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return func(writer string, more ...string) []string {
		return append([]string{"--server", srv.ClientURL(), "--scope", "membership", "--writer", writer}, more...)
	}
}

// untilLine waits for a line containing want, skipping others, and
// returns it.
func untilLine(t *testing.T, r *repl, want string) string {
	t.Helper()
	for {
		if l := r.next(); strings.Contains(l, want) {
			return l
		}
	}
}

// untilLineWithout waits for a line containing want, failing on any line
// before it that contains absent.
func untilLineWithout(t *testing.T, r *repl, want, absent string) {
	t.Helper()
	for {
		l := r.next()
		if strings.Contains(l, absent) {
			t.Fatalf("%s printed %q", r.name, l)
		}
		if strings.Contains(l, want) {
			return
		}
	}
}

func runShell(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runShellEnv(t, nil, stdin, args...)
}

// runShellEnv runs sharedconfig with env added to the test's environment.
func runShellEnv(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := programCommand(args...)
	c.Env = append(c.Env, env...)
	c.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	c.Run()
	return out.String(), errOut.String(), c.ProcessState.ExitCode()
}
