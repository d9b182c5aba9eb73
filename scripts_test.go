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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
)

// TestScripts runs testdata/script/*.txtar. Each script gets its own server,
// reachable through NATS_URL (and $SERVER), and a free port in $FREEPORT for
// scripts that start servers of their own.
func TestScripts(t *testing.T) {
	t.Parallel()
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
			env.Setenv("GORACE", os.Getenv("GORACE")) // no sleep at exit: TestMain
			// The scripts' "exec sharedconfig" runs the plain binary.
			env.Setenv("PATH", filepath.Dir(program())+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			env.Values[replsKey{}] = map[string]*scriptShell{}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"stoplocal":   stopLocal,
			"waitport":    waitPort,
			"repl":        scriptREPL,
			"send":        scriptSend,
			"expect":      scriptExpect,
			"close":       scriptClose,
			"term":        scriptTerm,
			"publish":     scriptPublish,
			"bigjson":     bigJSON,
			"smallserver": smallServer,
			"stream":      scriptStream,
		},
	})
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

// smallserver: starts a server whose max payload is smallPayload and points
// $NATS_URL and $SERVER at it for the rest of the script: an entry's limit,
// and so a snapshot's chunks, scale with it, so an import of a few times
// smallPayload takes the paths one of a few MiB takes on a default server.
func smallServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: smallserver")
	}
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: ts.MkAbs(".smallserver"), MaxPayload: smallPayload})
	ts.Check(err)
	ts.Defer(srv.Shutdown)
	ts.Setenv("NATS_URL", srv.ClientURL())
	ts.Setenv("SERVER", srv.ClientURL())
}

// bigjson FILE KEYS BYTES: writes FILE, a plain JSON object of KEYS keys
// (key.0000, ...) whose values are BYTES bytes each: files too big to keep
// in a script.
func bigJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: bigjson FILE KEYS BYTES")
	}
	keys, err1 := strconv.Atoi(args[1])
	size, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || size < 4 {
		ts.Fatalf("bigjson: KEYS and BYTES are counts, BYTES at least 4")
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n\"key.%04d\": \"%04d%s\"", i, i, strings.Repeat("v", size-4))
	}
	b.WriteString("\n}\n")
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o600))
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

// Background shells in scripts:
//
//	repl NAME ARGS...   start sharedconfig ARGS with a pipe for its stdin
//	send NAME LINE      type LINE into it
//	expect NAME TEXT    wait until it prints a line containing TEXT
//	close NAME [CODE]   end its input and wait for it to exit with CODE (0;
//	                    0|1 takes either)
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
	c := exec.Command(program(), args[1:]...)
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
// default 0; "0|1" takes either, for a script whose lines may or may not
// fail as a race goes).
func endShell(ts *testscript.TestScript, neg bool, args []string, word string, end func(*scriptShell)) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: %s NAME [EXIT-CODE[|EXIT-CODE...]]", word)
	}
	sh := shellNamed(ts, args[0])
	want, wanted := []int{0}, "0"
	if len(args) == 2 {
		want, wanted = nil, args[1]
		for code := range strings.SplitSeq(wanted, "|") {
			n, err := strconv.Atoi(code)
			ts.Check(err)
			want = append(want, n)
		}
	}
	end(sh)
	for line := range sh.lines {
		sh.seen = append(sh.seen, line)
		ts.Logf("%s: %s", args[0], line)
	}
	sh.cmd.Wait()
	ts.Check(os.WriteFile(ts.MkAbs(args[0]+".out"), []byte(strings.Join(sh.seen, "\n")+"\n"), 0o644))
	if got := sh.cmd.ProcessState.ExitCode(); !slices.Contains(want, got) {
		ts.Fatalf("%s exited with status %d, want %s", args[0], got, wanted)
	}
}

// stream SCOPE NAME SETTING [empty]: creates the stream of config
// SCOPE/NAME as sharedconfig would but for one setting (memory, maxage,
// subjects), as another program could; then, unless empty, stores one
// message in it.
func scriptStream(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 || len(args) == 4 && args[3] != "empty" {
		ts.Fatalf("usage: stream SCOPE NAME memory|maxage|subjects [empty]")
	}
	scope, name := args[0], args[1]
	subject := jetstream.Subject(scope, name)
	cfg := natsjs.StreamConfig{
		Name:        jetstream.StreamName(scope, name),
		Subjects:    []string{subject},
		Storage:     natsjs.FileStorage,
		DenyDelete:  true,
		AllowRollup: true,
		Duplicates:  2 * time.Minute,
		AllowDirect: true,
	}
	switch args[2] {
	case "memory":
		cfg.Storage = natsjs.MemoryStorage
	case "maxage":
		cfg.MaxAge = time.Hour
	case "subjects":
		cfg.Subjects = append(cfg.Subjects, subject+".more")
	default:
		ts.Fatalf("stream: unknown setting %q", args[2])
	}
	nc, err := nats.Connect(ts.Getenv("NATS_URL"))
	ts.Check(err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	ts.Check(err)
	_, err = js.CreateStream(context.Background(), cfg)
	ts.Check(err)
	if len(args) == 4 {
		return
	}
	_, err = js.Publish(context.Background(), subject, []byte("not an entry"))
	ts.Check(err)
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
