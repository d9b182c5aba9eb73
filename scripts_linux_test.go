//go:build linux

package main

import (
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// On a terminal, get --raw ends the value with a newline (the prompt would
// follow it on its line) and escapes what would drive the terminal.
func TestGetValueOnlyOnTerminal(t *testing.T) {
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
