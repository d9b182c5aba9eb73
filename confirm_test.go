//go:build linux

package main

import (
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// On a terminal, destroy asks, and only a yes deletes.
func TestDestroyAsksOnTerminal(t *testing.T) {
	srv, err := jetstream.StartServer(jetstream.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	args := []string{"--server", srv.ClientURL(), "-s", "asked"}
	if _, stderr, code := runShell(t, "PUT k, v\n", args...); code != 0 {
		t.Fatalf("PUT: exit %d, %s", code, stderr)
	}
	for _, answer := range []struct{ keys, want string }{
		{"\r", "**** Not destroyed"},
		{"no\r", "**** Not destroyed"},
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
