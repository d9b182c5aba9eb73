//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// ptyShell is sharedconfig running on a pseudo-terminal, as in a real
// terminal: go-prompt reads keys from it.
type ptyShell struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	slave  *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
}

func startPTY(t *testing.T, args ...string) *ptyShell {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), runMainEnv+"=1", "TERM=xterm")
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ptyShell{t: t, cmd: c, master: master, slave: slave, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
		slave.Close()
		master.Close()
		<-p.done
	})
	return p
}

// typeKeys writes one byte at a time: go-prompt takes a multi-byte read as
// one pasted key.
func (p *ptyShell) typeKeys(s string) {
	for i := range len(s) {
		if _, err := p.master.Write([]byte{s[i]}); err != nil {
			p.t.Fatal(err)
		}
		time.Sleep(15 * time.Millisecond)
	}
}

// waitFor waits until the output since the start contains want n times.
func (p *ptyShell) waitFor(want string, n int) {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		got := strings.Count(p.out.String(), want)
		p.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.Fatalf("the terminal does not show %q %d times; it shows:\n%s", want, n, p.out.String())
}

func (p *ptyShell) wait() int {
	p.t.Helper()
	exited := make(chan struct{})
	go func() { p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(15 * time.Second):
		p.t.Fatal("the shell did not exit")
		return -1
	}
}

func TestTerminal(t *testing.T) {
	srv, err := jetstream.StartServer(jetstream.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	for _, way := range []struct {
		name, keys string
	}{
		{"ctrl-d", "\x04"},
		{"quit", "QUIT\r"},
		{"ctrl-c twice", "x\x03\x03"},
	} {
		t.Run(way.name, func(t *testing.T) {
			p := startPTY(t, "--server", srv.ClientURL(), "--scope", "tty")
			before, err := term.GetState(int(p.slave.Fd()))
			if err != nil {
				t.Fatal(err)
			}
			p.waitFor("Enter one of the following commands", 1)
			p.waitFor("someConfig > ", 1)
			p.typeKeys("PUT colour, blue\r")
			p.waitFor("**** Property 'colour' ", 1)
			p.waitFor("someConfig > ", 2)
			// Completion offers the keys of the local copy.
			p.typeKeys("GET co")
			p.waitFor("colour", 3)
			p.typeKeys("lour\r")
			p.waitFor("**** The value of property 'colour' is 'blue'", 1)
			p.typeKeys(way.keys)
			if code := p.wait(); code != 0 {
				p.mu.Lock()
				defer p.mu.Unlock()
				t.Fatalf("exit status %d, want 0; the terminal shows:\n%s", code, p.out.String())
			}
			after, err := term.GetState(int(p.slave.Fd()))
			if err != nil {
				t.Fatal(err)
			}
			if *before != *after {
				t.Fatalf("the terminal was not restored:\nbefore %+v\nafter  %+v", *before, *after)
			}
		})
	}
}

func TestTerminalSIGTERM(t *testing.T) {
	srv, err := jetstream.StartServer(jetstream.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "tty")
	before, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor("someConfig > ", 1)
	p.typeKeys("GE") // mid-line, in raw mode
	time.Sleep(100 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0", code)
	}
	after, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if *before != *after {
		t.Fatal("the terminal was not restored after SIGTERM")
	}
}

// In follow mode, a change made elsewhere prints above the prompt, and the
// line being typed is drawn again below it, intact.
func TestTerminalFollowPrintsAbove(t *testing.T) {
	srv, err := jetstream.StartServer(jetstream.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttyfollow", "--follow")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("GET co")
	other := exec.Command(os.Args[0], "--server", srv.ClientURL(), "--scope", "ttyfollow", "--writer", "bob")
	other.Env = append(os.Environ(), runMainEnv+"=1")
	other.Stdin = strings.NewReader("PUT colour, blue\n")
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("the other shell: %v\n%s", err, out)
	}
	p.waitFor(">>>> revision 2 by bob: PUT colour , blue", 1)
	// The half-typed line is drawn again after the message (go-prompt puts
	// colour codes between the prompt and the text).
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		msg := strings.LastIndex(out, ">>>> revision 2")
		if strings.Contains(out[msg:], "GET co") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the typed line was not drawn again after the message:\n%q", out[msg:])
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.typeKeys("lour\r")
	p.waitFor("**** The value of property 'colour' is 'blue'", 1)
	p.typeKeys("\x04")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}
