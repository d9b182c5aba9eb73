package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// A script that is a directory cannot run: the shell does not start (exit
// status 2, as for a missing file), and says so before trying a server.
func TestScriptIsADirectory(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "nats://127.0.0.1:1") // nothing listens: not to be tried
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", dir}, strings.NewReader(""), &stdout, &stderr); code != exitStartup {
		t.Errorf("exit status %d, want %d", code, exitStartup)
	}
	if want := "sharedconfig: " + dir + " is a directory, not a script\n"; stderr.String() != want {
		t.Errorf("stderr: %q, want %q", stderr.String(), want)
	}
}
