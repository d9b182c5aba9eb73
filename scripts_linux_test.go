//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// On a terminal, get --raw ends the value with a newline (the prompt would
// follow it on its line) and escapes what would drive the terminal.
func TestGetValueOnlyOnTerminal(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "-s", "rawterm"}
	if _, stderr, code := runShell(t, "", append(args, "put", "k", "red \x1b[31mtext")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	p := startPTY(t, append(args, "get", "--raw", "k")...)
	p.waitFor(`red \x1b[31mtext`+"\r\n", 1)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if p.count("\x1b[31m") != 0 {
		t.Error("the escape sequence in the value reached the terminal")
	}
}

// The shell on a terminal: the prompt names the scope when it is not the
// default; the first Ctrl-C on an empty line says how to leave; lines typed
// are kept for the next session (Up), but not lines that hold a password,
// and with --no-history none.
func TestTerminalPromptHistoryAndCtrlC(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	args := []string{"--server", srv.ClientURL(), "-s", "demo"}
	p := startPTYEnv(t, env, args...)
	p.waitFor("demo/someConfig > ", 1)
	p.typeKeys("PUT a, 1\r")
	p.waitFor("**** Property 'a' added with value '1'", 1)
	p.typeKeys("PUT db.password, hunter2\r")
	p.waitForAfter("**** Property 'db.password' added with value 'hunter2'", "demo/someConfig > ")
	p.typeKeys("\x03")
	p.waitFor("(Ctrl-D or QUIT to leave)", 1)
	p.typeKeys("GET a\x03") // a Ctrl-C that clears a line says nothing
	p.typeKeys("QUIT\r")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := p.count("(Ctrl-D or QUIT to leave)"); n != 1 {
		t.Errorf("the hint was shown %d times, want 1", n)
	}
	path := filepath.Join(state, "sharedconfig", "history")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "PUT a, 1\nQUIT\n"; got != want {
		t.Errorf("history file %q, want %q", got, want)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v, %v; want mode 0600", info.Mode(), err)
	}

	want := "PUT a, 1\nQUIT\nPUT a, 1\n"
	recallFromHistory(t, env, args)
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("history file %q, want %q", b, want)
	}

	p = startPTYEnv(t, env, append(args, "--no-history")...)
	p.waitFor("demo/someConfig > ", 1)
	p.typeKeys("GET a\r")
	p.waitFor("is '1'", 1)
	p.typeKeys("\x04")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("with --no-history the file became %q", b)
	}
}

// recallFromHistory starts a shell that recalls the line before last of
// the history file (Up twice), runs it, and leaves with Ctrl-D.
func recallFromHistory(t *testing.T, env, args []string) {
	t.Helper()
	p := startPTYEnv(t, env, args...)
	p.waitFor("demo/someConfig > ", 1)
	for range 2 { // Up twice: QUIT, then PUT a, 1
		p.paste("\x1b[A") // one write: one key
		time.Sleep(50 * time.Millisecond)
	}
	p.waitFor("PUT a, 1", 1)
	p.typeKeys("\r")
	p.waitFor("**** Property 'a' updated from: '1' to: '1'", 1)
	p.typeKeys("\x04")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// On the default scope the prompt is the config's name alone, as the
// original's.
func TestTerminalPromptDefaultScope(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startPTY(t, "--server", srv.ClientURL())
	p.waitFor("someConfig > ", 1)
	p.typeKeys("\x04")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if p.count("/someConfig > ") != 0 {
		t.Error("the prompt names the default scope")
	}
}
