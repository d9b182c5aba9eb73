package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// A tiny --exit-when-idle is an idle time like any other: the server exits
// once it has had no client for it (it panicked: a ticker of zero).
func TestServerTinyIdleExit(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"server", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--exit-when-idle", "1ns"}
	if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit status %d, want %d; stderr: %s", code, exitOK, stderr.String())
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("stderr: %q; want the server to say it shuts down", stderr.String())
	}
}
