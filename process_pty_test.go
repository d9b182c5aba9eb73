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
	done   chan struct{} // the output is read to its end
	exited chan struct{} // the process has exited (cmd.Wait returned)
}

func startPTY(t *testing.T, args ...string) *ptyShell {
	t.Helper()
	return startPTYEnv(t, nil, args...)
}

// startPTYEnv starts a shell on a terminal with env added to the test's
// environment (tests that run in parallel cannot change their own). The
// shell is the test binary, built with -race when the tests are, not the
// plain program the other process tests run: on a terminal the prompt,
// follow mode's printing and the signals meet in one process, as no
// package's own test puts them together.
func startPTYEnv(t *testing.T, env []string, args ...string) *ptyShell {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Env = env
	return startPTYCmd(t, c)
}

// startPTYCmd runs c on a terminal, its environment (c.Env) added to the
// test's.
func startPTYCmd(t *testing.T, c *exec.Cmd) *ptyShell {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if master, err = pollable(master); err != nil {
		t.Fatal(err)
	}
	c.Env = append(append(os.Environ(), runMainEnv+"=1", "TERM=xterm"), c.Env...)
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ptyShell{t: t, cmd: c, master: master, slave: slave, done: make(chan struct{}), exited: make(chan struct{})}
	// One goroutine waits for the process, so that wait and the cleanup
	// never call cmd.Wait at once.
	go func() { c.Wait(); close(p.exited) }()
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
		<-p.exited
		slave.Close()
		master.Close()
		<-p.done
	})
	return p
}

// pollable returns the pty master f as a file of the runtime's poller, and
// closes f. creack/pty's ioctls call f.Fd(), which leaves f blocking; the
// Close of a blocking file waits for the read under way in another
// goroutine, so closing the master would not hang the terminal up until
// something was read. A non-blocking copy of the descriptor closes at once.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
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

// paste writes s at once, as a terminal does with a paste.
func (p *ptyShell) paste(s string) {
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

func (p *ptyShell) count(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Count(p.out.String(), s)
}

// restored fails unless the terminal's settings are those of before.
func (p *ptyShell) restored(before *term.State) {
	p.t.Helper()
	after, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		p.t.Fatal(err)
	}
	if *before != *after {
		p.t.Fatalf("the terminal was not restored:\nbefore %+v\nafter  %+v", *before, *after)
	}
}

// inOrder fails unless the output shows each of want, in this order.
func (p *ptyShell) inOrder(want ...string) {
	p.t.Helper()
	p.mu.Lock()
	out := p.out.String()
	p.mu.Unlock()
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			p.t.Fatalf("the terminal does not show %q after %q:\n%s", w, out[:at], out)
		}
		at += i + len(w)
	}
}

// waitFor waits until the output since the start contains want n times.
func (p *ptyShell) waitFor(want string, n int) {
	p.t.Helper()
	deadline := time.Now().Add(patience)
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

// waitForAfter waits until the output shows want after the last after:
// say, the prompt drawn after an answer, once the shell reads a line
// again (a Ctrl-C before that goes to the command that just ended).
func (p *ptyShell) waitForAfter(after, want string) {
	p.t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if i := strings.LastIndex(out, after); i >= 0 && strings.Contains(out[i+len(after):], want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.Fatalf("the terminal does not show %q after %q; it shows:\n%s", want, after, p.out.String())
}

func (p *ptyShell) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(patience):
		p.t.Fatalf("the shell did not exit within %s", patience)
		return -1
	}
}

func (p *ptyShell) lineWith(s string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.out.String()
	i := strings.Index(out, s)
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(out[i:], "\r")
	return line
}
