//go:build linux

package main

import (
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// On a terminal, destroy asks, and only a yes deletes.
func TestDestroyAsksOnTerminal(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "-s", "asked"}
	if _, stderr, code := runShell(t, "PUT k, v\n", args...); code != 0 {
		t.Fatalf("PUT: exit %d, %s", code, stderr)
	}
	for _, answer := range []struct{ keys, want string }{
		{"\r", "**** Not destroyed"},
		{"no\r", "**** Not destroyed"},
		{"\x03", "**** Not destroyed"}, // Ctrl-C: a no at once, not a wait for Enter
		{"y\r", "**** Destroyed asked/someConfig (stream SC_5_asked_someConfig: 2 entries, last revision 2)"},
	} {
		p := startPTY(t, append(args, "destroy")...)
		p.waitFor("? This cannot be undone. [y/N] ", 1)
		p.typeKeys(answer.keys)
		p.waitFor(answer.want, 1)
		if code := p.wait(); code != 0 {
			t.Fatalf("answering %q: exit %d", answer.keys, code)
		}
	}
	if _, stderr, code := runShell(t, "", append(args, "destroy", "--yes")...); code != 1 {
		t.Fatalf("a second destroy: exit %d, %s; want 1 (no such config)", code, stderr)
	}
}
