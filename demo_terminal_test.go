package main

import (
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// On a terminal the demo's timeline is in colour (a refused try red, a
// committed one green), unless NO_COLOR is set; through a pipe it is plain
// (testdata/script/demo.txtar).
func TestDemoColoursOnATerminal(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	for _, noColour := range []bool{false, true} {
		var env []string
		if noColour {
			env = []string{"NO_COLOR=1"}
		}
		p := startPTYEnv(t, env, "demo", "race", "--speed", "100", "--server", srv.ClientURL())
		if code := p.wait(); code != 0 {
			t.Fatalf("exit status %d", code)
		}
		p.waitFor("PUT color = red", 1) // the last line
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		red, green := strings.Contains(out, "\x1b[31m#1 on r2 ✗ r3"), strings.Contains(out, "\x1b[32m#1 on r1 ✓ r2")
		switch {
		case !noColour && (!red || !green):
			t.Errorf("on a terminal, refused tries are not red (%v) or committed ones green (%v):\n%q", red, green, out)
		case noColour && strings.Contains(out, "\x1b["):
			t.Errorf("with NO_COLOR set, the output has escape sequences:\n%q", out)
		}
	}
}
