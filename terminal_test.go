//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

func TestTerminal(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
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
			// Every way out says the goodbye QUIT says, once.
			p.waitFor("**** Exiting...", 1)
			if code := p.wait(); code != 0 {
				p.mu.Lock()
				defer p.mu.Unlock()
				t.Fatalf("exit status %d, want 0; the terminal shows:\n%s", code, p.out.String())
			}
			if n := p.count("Exiting"); n != 1 {
				t.Fatalf("the goodbye shows %d times", n)
			}
			p.restored(before)
		})
	}
}

func TestTerminalSIGTERM(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
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
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttyfollow", "--follow")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("GET co")
	other := programCommand("--server", srv.ClientURL(), "--scope", "ttyfollow", "--writer", "bob")
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

// WATCH prefix prints changes under the prefix above the prompt, as follow
// mode does, and nothing of other keys.
func TestTerminalWatchPrintsAbove(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttywatch")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("WATCH app.\r")
	p.waitFor("**** Watching keys starting 'app.' from revision 1", 1)
	p.typeKeys("GET ap")
	other := programCommand("--server", srv.ClientURL(), "--scope", "ttywatch", "--writer", "bob")
	other.Stdin = strings.NewReader("PUT other, 1\nPUT app.k, v\n")
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("the other shell: %v\n%s", err, out)
	}
	// Its revision is 3, or 2 when the other shell's two lines land as one
	// entry (group commit).
	const shown = " by bob: PUT app.k , v"
	p.waitFor(shown, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if strings.Contains(out, "PUT other") {
			t.Fatalf("a change outside the prefix was shown:\n%q", out)
		}
		if msg := strings.LastIndex(out, shown); strings.Contains(out[msg:], "GET ap") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the typed line was not drawn again after the message:\n%q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.typeKeys("p.k\r")
	p.waitFor("**** The value of property 'app.k' is 'v'", 1)
	p.typeKeys("\x04")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// A paste of several lines runs each line in order, as if typed: go-prompt
// on its own takes one read as one key, and ran none of them.
func TestTerminalPaste(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttypaste")
	before, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor("someConfig > ", 1)
	p.paste("PUT a, 1\rPUT b , \"x, y\"\r\r\x1b[200~GET b\r\x1b[201~GET_ALL\r")
	p.waitFor("| b   | x, y  |", 1)
	p.inOrder("**** Property 'a' added with value '1'",
		"**** Property 'b' added with value 'x, y'",
		"**** The value of property 'b' is 'x, y'",
		"**** Properties for SharedConfig: 'someConfig' :")
	p.paste("\x04")
	p.waitFor("**** Exiting...", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	p.restored(before)
}

// Ctrl-C while a command waits for a server that has gone cancels that
// command, says whether the change may have been made, and the shell stays.
// Keys typed while a command runs, Ctrl-D among them, are kept for after it.
func TestTerminalCtrlCAndTypeAhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	url := srv.ClientURL()
	// The shell reaches the server through a proxy that can make it hang:
	// a write to a server that is down fails at once (nothing waits).
	proxy := jstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	p := startPTY(t, "--server", proxy.URL(), "--scope", "ttycancel", "--timeout", "5m")
	before, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor("someConfig > ", 1)
	p.paste("PUT a, 1\r")
	p.waitFor("**** Property 'a' added with value '1'", 1)
	proxy.Freeze()

	// The PUT waits for the server (for up to --timeout) until Ctrl-C.
	p.paste("PUT x, 1\r")
	p.waitFor("PUT x, 1\r\n", 1)
	p.paste("\x03")
	p.waitFor("!!!! Cancelled: ", 1)
	p.paste("GET a\r")
	p.waitFor("**** The value of property 'a' is '1'", 1)

	// Keys typed while a PUT waits run after it.
	dropped := proxy.Dropped()
	p.paste("PUT y, 2\r")
	p.waitFor("PUT y, 2\r\n", 1)
	p.paste("GET y\r\x04")
	// Once the PUT has been sent (a write not sent yet when the connection
	// breaks fails at once), the client reconnects and the PUT tries again.
	// Only its publish will do: the cancelled PUT's own read of the log may
	// reach the frozen server after the GET.
	proxy.WaitForDropOf(t, dropped, "Nats-Expected-Last-Sequence")
	proxy.Thaw()
	p.waitFor("**** Exiting...", 1)
	p.inOrder("**** Property 'y' added with value '2'", "**** The value of property 'y' is '2'", "**** Exiting...")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	p.restored(before)
	cancelSaidTheTruth(t, p, url)
}

// cancelSaidTheTruth checks that what p's cancel of PUT x said is true:
// "nothing was changed" means x is not there, even once the client has
// reconnected and sent what it held.
func cancelSaidTheTruth(t *testing.T, p *ptyShell, url string) {
	t.Helper()
	other := programCommand("--server", url, "--scope", "ttycancel")
	other.Stdin = strings.NewReader("GET x\n")
	out, err := other.CombinedOutput()
	if err != nil {
		t.Fatalf("the other shell: %v\n%s", err, out)
	}
	if p.count("!!!! Cancelled: nothing was changed") == 1 && !strings.Contains(string(out), "'x' is undefined") {
		t.Fatalf("the cancel said nothing was changed, but:\n%s", out)
	}
	t.Logf("the cancel said %q; then %s", p.lineWith("Cancelled"), out)
}

// Closing the terminal hangs it up: the shell ends as Ctrl-D ends it,
// revoking its leases at once, whether the hang-up signal reaches it (it
// ends as on SIGTERM) or is ignored, as under nohup (the terminal's read
// fails). Its goodbye cannot be written to a terminal that is gone: exit
// status 1, as for any output that cannot be written.
func TestTerminalHangUp(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	for _, tc := range []struct{ scope, sh string }{
		{"hup", `exec "$0" "$@"`},
		{"nohup", `trap "" HUP; exec "$0" "$@"`},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			p := startPTYCmd(t, exec.Command("/bin/sh", "-c", tc.sh, program(), "--server", srv.ClientURL(), "--scope", tc.scope))
			p.waitFor("someConfig > ", 1)
			p.typeKeys("REGISTER_LEASE l, 1h\r")
			p.waitFor("**** Lease 'l' registered", 1)
			p.waitFor("someConfig > ", 2)
			p.typeKeys("GET a") // half a line
			p.master.Close()
			code := p.wait()
			if status := p.cmd.ProcessState.Sys().(syscall.WaitStatus); status.Signaled() || code != 1 {
				t.Fatalf("the shell ended with %v, want exit status 1", p.cmd.ProcessState)
			}
			leases := programCommand("--server", srv.ClientURL(), "--scope", tc.scope, "exec", "LEASES")
			out, err := leases.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "**** No leases") {
				t.Fatalf("after the hang-up, LEASES: %v\n%s", err, out)
			}
		})
	}
}

// A Tab in a paste is text, as in a script: as the Tab key it completed a
// key, so a pasted "REMOVE \t" removed a key nobody named and "PUT k\t, v"
// wrote to another key.
func TestTerminalPastedTabIsText(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttytab")
	p.waitFor("someConfig > ", 1)
	p.paste("PUT k1 , one\rPUT k2 , two\r")
	p.waitFor("**** Property 'k2' added", 1)
	p.paste("REMOVE \t\rPUT k\t, x\ty\rGET_ALL\r")
	p.waitFor("| k2  | two ", 1)
	p.inOrder("!!!! ", "**** Property 'k' added with value '\"x\\ty\"'",
		"| k1  | one ", "| k2  | two ")
	if n := p.count("removed"); n != 0 {
		t.Fatalf("a pasted Tab removed a key:\n%s", p.lineWith("removed"))
	}
}

// A terminal that says it cannot move its cursor (TERM=dumb, as Emacs's
// M-x shell does) gets a plain prompt and plain answers: go-prompt's
// escape sequences showed there as text around every line.
func TestTerminalDumb(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTYEnv(t, []string{"TERM=dumb"}, "--server", srv.ClientURL(), "--scope", "ttydumb", "--follow")
	before, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor("someConfig > ", 1)
	p.paste("PUT a, 1\nGET a\n")
	p.waitFor("**** The value of property 'a' is '1'", 1)
	p.waitFor("someConfig > ", 3)
	// Another writer's change, on a line of its own, then the prompt again.
	if out, err := programCommand("--server", srv.ClientURL(), "--scope", "ttydumb", "put", "b", "2").CombinedOutput(); err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	p.waitFor("someConfig > \r\n>>>> revision 3 by ", 1)
	p.waitFor("someConfig > ", 4)
	p.paste("\x04")
	p.waitFor("**** Exiting...", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	p.inOrder("someConfig > ", "**** Property 'a' added with value '1'", "someConfig > ", "**** The value of property 'a' is '1'")
	if n := p.count("\x1b"); n != 0 {
		t.Fatalf("%d escape sequences on a dumb terminal, in:\n%q", n, p.lineWith("\x1b"))
	}
	p.restored(before)
}

// Ctrl-Z suspends the shell as it suspends any program in a shell with job
// control, and fg brings it back as it was: raw, completing, prompting.
// The terminal is raw, so Ctrl-Z was a key that did nothing; and a SIGTSTP
// sent from outside stopped the shell with the terminal raw, then left it
// to run on whatever settings the job-control shell had put back: echo on,
// whole lines, no completion.
func TestTerminalSuspend(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to suspend the shell in")
	}
	p := startPTYCmd(t, exec.Command(bash, "--norc", "--noprofile", "-i"))
	p.typeKeys("PS1='bash$ '; '" + program() + "' --server " + srv.ClientURL() + " --scope ttysuspend --no-history\r")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("PUT colour, blue\r")
	p.waitFor("**** Property 'colour' added", 1)
	for i, stop := range []func(){
		func() { p.typeKeys("\x1a") }, // Ctrl-Z
		func() { syscall.Kill(childOf(t, p.cmd.Process.Pid), syscall.SIGTSTP) },
	} {
		stop()
		p.waitFor("Stopped", i+1)
		p.waitFor("bash$ ", i+2) // the first in the line typed
		p.typeKeys("fg\r")
		// Completes to colour, which only a raw terminal does. A Tab read
		// with other keys is a paste's text, so it goes in a read of its
		// own, as a person's does, not typed ahead with the line.
		p.typeKeys("GET co")
		time.Sleep(300 * time.Millisecond)
		p.typeKeys("\t")
		time.Sleep(300 * time.Millisecond)
		p.typeKeys("\r")
		p.waitFor("**** The value of property 'colour' is 'blue'", i+1)
	}
	p.typeKeys("\x04")
	p.waitFor("**** Exiting...", 1)
	p.typeKeys("exit\r")
	p.wait()
}

// childOf is the process id of pid's one child.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var child int
	if _, serr := fmt.Sscan(string(b), &child); err != nil || serr != nil {
		t.Fatalf("the child of %d: %v %v (%q)", pid, err, serr, b)
	}
	return child
}

// A shell whose answers go to a pipe whose reader has left ("sharedconfig |
// head -1") ends as when any output cannot be written, with the terminal
// restored: SIGPIPE killed it with the terminal left raw (no echo, no line
// editing, Ctrl-C not an interrupt) and its leases held.
func TestTerminalClosedPipe(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTYCmd(t, exec.Command("/bin/bash", "-c", `"$0" "$@" | true; exit ${PIPESTATUS[0]}`, program(), "--server", srv.ClientURL(), "--scope", "ttypipe"))
	before, err := term.GetState(int(p.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	// It prompts on the terminal, stderr; its first answer goes to the pipe.
	p.waitFor("someConfig > ", 1)
	p.typeKeys("GET_ALL\r")
	if code := p.wait(); code != 1 {
		t.Fatalf("the shell ended with %v, want exit status 1; the terminal shows:\n%s", p.cmd.ProcessState, p.lineWith("sharedconfig"))
	}
	p.waitFor("sharedconfig: writing standard output: ", 1)
	p.restored(before)
}

// The terminal's window title is the user's shell's: go-prompt cleared it
// after every line it read, so a tab's title went blank at the first
// command and stayed so.
func TestTerminalKeepsTheWindowTitle(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttytitle")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("GET a\r")
	p.waitFor("!!!! Property 'a' is undefined", 1)
	p.typeKeys("\x04")
	p.waitFor("**** Exiting...", 1)
	p.wait()
	if n := p.count("\x1b]2;"); n != 0 {
		t.Fatalf("the window title was set %d times", n)
	}
}

// A change made elsewhere shows above the line being typed when that line
// is longer than the window is wide, too: the line was drawn again over
// the message, which the user never saw.
func TestTerminalFollowPrintsAboveAWrappedLine(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttyfollowwrap", "--follow")
	p.waitFor("someConfig > ", 1)
	long := "PUT k , " + strings.Repeat("v", 250) // three rows of 120
	p.paste(long)
	p.waitFor(long[len(long)-20:], 1)
	other := programCommand("--server", srv.ClientURL(), "--scope", "ttyfollowwrap", "--writer", "bob", "put", "colour", "blue")
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("the other writer: %v\n%s", err, out)
	}
	p.waitFor(">>>> revision 2 by bob: PUT colour , blue", 1)
	p.waitFor(long[len(long)-20:], 2) // drawn again
	time.Sleep(100 * time.Millisecond)
	p.mu.Lock()
	lines := render(p.out.String(), 120)
	p.mu.Unlock()
	shown := strings.Join(lines, "\n")
	i := strings.Index(shown, ">>>> revision 2 by bob")
	if i < 0 || !strings.Contains(shown[i:], "someConfig > PUT k , vvv") {
		t.Fatalf("the screen does not show the change, then the line being typed:\n%s", shown)
	}
}

// A window made narrower as a line is typed: the keys typed after it drew
// the line again for the old width, a new copy of it for each key. The
// line is now drawn once more, in the new width, and typed on there.
func TestTerminalResizeAsALineIsTyped(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttyresize", "--no-history")
	p.waitFor("someConfig > ", 1)
	long := "PUT k , " + strings.Repeat("v", 80)
	p.paste(long)
	p.waitFor(long, 1)
	p.mu.Lock()
	mark := p.out.Len()
	p.mu.Unlock()
	ws := &unix.Winsize{Row: 40, Col: 60}
	if err := unix.IoctlSetWinsize(int(p.slave.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // for SIGWINCH
	p.typeKeys("wwwww")
	p.waitFor("wwwww", 1)
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	s := newScreen(120)
	s.write(p.out.String()[:mark])
	s.cols = 60 // it does not reflow what it shows, as xterm does not
	s.write(p.out.String()[mark:])
	p.mu.Unlock()
	shown := strings.Join(s.lines(), "\n")
	if n := strings.Count(shown, "someConfig > PUT k , v"); n > 2 {
		t.Fatalf("the line shows %d times:\n%s", n, shown)
	}
	if !strings.HasSuffix(strings.TrimRight(shown, "\n"), "vvwwwww") {
		t.Fatalf("the line typed on is not the last thing shown:\n%s", shown)
	}
	p.typeKeys("\r")
	p.waitFor("**** Property 'k' added with value 'vvvv", 1)
}

// After Ctrl-Z and fg, a line that wraps is drawn again below what the
// job-control shell printed meanwhile: go-prompt moved up as many rows as
// the line's cursor was below its prompt, as if the cursor were still
// where it left it, and drew the line over the shell's lines above.
func TestTerminalSuspendAWrappedLine(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to suspend the shell in")
	}
	p := startPTYCmd(t, exec.Command(bash, "--norc", "--noprofile", "-i"))
	p.typeKeys("PS1='bash$ '; '" + program() + "' --server " + srv.ClientURL() + " --scope ttysuspendwrap --no-history\r")
	p.waitFor("someConfig > ", 1)
	long := "PUT k , " + strings.Repeat("v", 250) // three rows of 120
	p.paste(long)
	p.waitFor(long[len(long)-20:], 1)
	p.typeKeys("\x1a")
	p.waitFor("Stopped", 1)
	p.waitFor("bash$ ", 2)
	p.typeKeys("fg\r")
	p.waitFor(long[len(long)-20:], 2) // drawn again
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	shown := strings.Join(render(p.out.String(), 120), "\n")
	p.mu.Unlock()
	// bash says the job's command line as it continues it, on the rows
	// below "fg"; the line comes after, whole.
	fg := strings.LastIndex(shown, "bash$ fg\n")
	at := strings.Index(shown[max(fg, 0):], "\nttysuspendwrap/someConfig > "+long[:40])
	if fg < 0 || at < 0 || !strings.HasSuffix(strings.ReplaceAll(shown[fg:fg+at], "\n", ""), "--scope ttysuspendwrap --no-history") {
		t.Fatalf("after fg the screen does not show bash's lines, then the line typed:\n%s", shown)
	}
	p.typeKeys("x\r")
	p.waitFor("**** Property 'k' added with value 'vvvv", 1)
	p.typeKeys("\x04")
	p.waitFor("**** Exiting...", 1)
	p.typeKeys("exit\r")
	p.wait()
}

// With its answers redirected to a file and the keys coming from a
// terminal, the shell prompts, echoes and completes on the terminal, and
// the file gets the answers alone: before, the prompt and its escape
// sequences went into the file, and the user typed blind. The banner goes
// to the terminal; a failed line's warning goes to stderr, as in a script,
// so into the file too with 2>&1.
func TestTerminalAnswersToAFile(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	for _, tc := range []struct {
		name, scope, redirect string
		failureInFile         bool
	}{
		{"stdout", "ttyfile", `> "$F"`, false},
		{"stdout and stderr", "ttyfile2", `> "$F" 2>&1`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := t.TempDir() + "/out.txt"
			sh := exec.Command("/bin/sh", "-c", `exec "$0" "$@" `+tc.redirect, program(), "--server", srv.ClientURL(), "--scope", tc.scope, "--no-history")
			sh.Env = []string{"F=" + file}
			p := startPTYCmd(t, sh)
			p.waitFor("someConfig > ", 1)
			p.typeKeys("PUT colour, blue\r")
			p.waitFor("someConfig > ", 2)
			p.typeKeys("GET co")
			p.waitFor("colour", 2) // the line typed, and completion offers the key
			p.typeKeys("lour\r")
			p.waitFor("someConfig > ", 3)
			p.typeKeys("GETT\r")
			p.waitFor("someConfig > ", 4)
			p.typeKeys("\x04")
			if code := p.wait(); code != 0 {
				t.Fatalf("exit status %d", code)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := "**** Property 'colour' added with value 'blue'\n**** The value of property 'colour' is 'blue'\n"
			if tc.failureInFile {
				want += "!!!! Unknown command: 'GETT' (did you mean GET? HELP lists the commands)\n"
			}
			want += "**** Exiting...\n"
			if string(got) != want {
				t.Fatalf("the file holds:\n%q\nwant:\n%q", got, want)
			}
			if !tc.failureInFile {
				p.waitFor("!!!! Unknown command: 'GETT'", 1)
			}
			p.inOrder("Enter one of the following commands", "someConfig > ", "PUT colour, blue", "GET colour")
			if n := p.count("**** "); n != 0 {
				t.Fatalf("%d answers on the terminal too", n)
			}
		})
	}
}

// A key go-prompt has no name for (Shift-F5, Alt-Up) does nothing: its
// escape sequence went into the line as text, drawn as "?[15;2~" with the
// cursor astray, and was stored in the value, ESC and all.
func TestTerminalUnknownKeysDoNothing(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttyunknownkeys", "--no-history")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("PUT k, a")
	for _, key := range []string{"\x1b[15;2~", "\x1b[1;3A", "\x1b[I"} {
		p.paste(key) // a terminal sends a key's sequence in one write
		time.Sleep(50 * time.Millisecond)
	}
	p.typeKeys("b")
	p.waitFor("ab", 1)
	time.Sleep(100 * time.Millisecond)
	p.mu.Lock()
	shown := render(p.out.String(), 120)
	p.mu.Unlock()
	if last := shown[len(shown)-1]; last != "ttyunknownkeys/someConfig > PUT k, ab" {
		t.Fatalf("the line shows as %q", last)
	}
	p.typeKeys("\r")
	p.waitFor("**** Property 'k' added with value ", 1)
	if line := p.lineWith("**** Property 'k' added"); line != "**** Property 'k' added with value 'ab'" {
		t.Fatalf("the value typed is stored as %q", line)
	}
}

// A line taller than the window (a pasted certificate, say) is drawn, as
// any long output is: go-prompt erased the screen instead and said "Your
// console window is too small..." in its place.
func TestTerminalALineTallerThanTheWindow(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttytall", "--no-history")
	p.waitFor("someConfig > ", 1)
	long := "PUT cert , " + strings.Repeat("c", 50*120) // 50 rows of a 40-row window
	p.paste(long)
	p.waitFor(long[len(long)-200:], 1)
	p.typeKeys("x")
	p.waitFor("cx", 1)
	if n := p.count("too small"); n != 0 {
		t.Fatalf("the line was not drawn: %q", p.lineWith("too small"))
	}
	if n := p.count("\x1b[2J"); n != 0 {
		t.Fatal("the screen was erased")
	}
	p.typeKeys("\r")
	p.waitFor("**** Property 'cert' added with value 'cccc", 1)
}

// A Tab in a paste is text, shown as ␉, one column wide, as go-prompt
// counts it: as a Tab it took the terminal up to eight columns and
// go-prompt none, so every key after it drew the line in the wrong place.
// It is still a Tab in the line run. C1 controls in a paste are dropped,
// as C0 controls are keys: echoed, a terminal could obey them.
func TestTerminalPastedTabsAndControlsShow(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttytabs", "--no-history")
	p.waitFor("someConfig > ", 1)
	p.paste("PUT k, a\tb\tc")
	time.Sleep(100 * time.Millisecond)
	p.typeKeys("Z")
	for range 3 {
		p.paste("\x1b[D") // Left
		time.Sleep(50 * time.Millisecond)
	}
	p.typeKeys("Y")
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	shown := render(p.out.String(), 120)
	p.mu.Unlock()
	if last := shown[len(shown)-1]; last != "ttytabs/someConfig > PUT k, a␉bY␉cZ" {
		t.Fatalf("the line shows as %q", last)
	}
	p.typeKeys("\r")
	p.waitFor(`**** Property 'k' added with value '"a\tbY\tcZ"'`, 1)
	p.paste("PUT c1, x\u009b2J\u0085y\r")
	p.waitFor("**** Property 'c1' added with value 'x2Jy'", 1)
}

// A long pasted line is drawn a few times, not once for each 4 KiB read
// of the paste: go-prompt draws the whole line again for each key it
// takes, and took a minute over a pasted line of 2 MiB.
func TestTerminalPasteAVeryLongLine(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL(), "--scope", "ttyverylong", "--no-history")
	p.waitFor("someConfig > ", 1)
	before := p.count("someConfig > ")
	long := "PUT k , " + strings.Repeat("v", 200000) + "END" // 49 reads
	// In the background: the terminal takes it as the shell reads it.
	go p.master.Write([]byte(long))
	p.waitFor("vEND", 1)
	if n := p.count("someConfig > ") - before; n > 20 {
		t.Fatalf("the line was drawn %d times as it was pasted", n)
	}
	p.typeKeys("\x03\x04")
	p.waitFor("**** Exiting...", 1)
}

// Up skips a line of the history file that holds control characters (an
// older version stored the escape sequences of keys it did not know): it
// was drawn with go-prompt's cursor astray, or obeyed by the terminal.
func TestTerminalHistorySkipsControls(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	state := t.TempDir()
	if err := os.MkdirAll(state+"/sharedconfig", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state+"/sharedconfig/history", []byte("GET good\nPUT k, a\x1b[15;2~b\x07\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startPTYEnv(t, []string{"XDG_STATE_HOME=" + state}, "--server", srv.ClientURL(), "--scope", "ttyhistory")
	p.waitFor("someConfig > ", 1)
	p.paste("\x1b[A") // Up
	p.waitFor("GET good", 1)
	time.Sleep(100 * time.Millisecond)
	p.mu.Lock()
	shown := render(p.out.String(), 120)
	p.mu.Unlock()
	if last := shown[len(shown)-1]; last != "ttyhistory/someConfig > GET good" {
		t.Fatalf("Up shows %q", last)
	}
}

// Keys typed once the shell has said goodbye go to the user's shell: the
// shell read them on while it left (revoking its leases may take its
// whole exit budget when the server does not answer), and dropped them.
// TestTerminalSuspend's "exit" to bash was lost so under load.
func TestTerminalKeysAfterQuitGoToTheShell(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the shell in")
	}
	proxy := jstest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	p := startPTYCmd(t, exec.Command(bash, "--norc", "--noprofile", "-i"))
	p.typeKeys("PS1='bash$ '; '" + program() + "' --server " + proxy.URL() + " --scope ttyafterquit --no-history\r")
	p.waitFor("someConfig > ", 1)
	p.typeKeys("REGISTER_LEASE l, 1h\r")
	p.waitFor("**** Lease 'l' registered", 1)
	proxy.Freeze() // the revoke waits out the exit budget
	p.typeKeys("\x04")
	p.waitFor("**** Exiting...", 1)
	time.Sleep(100 * time.Millisecond)
	p.typeKeys("echo after-$((6*7))\r")
	p.waitFor("after-42", 1)
	p.typeKeys("exit\r")
	p.wait()
}
