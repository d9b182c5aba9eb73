package cmd

import (
	"bytes"
	"net"
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

// Something on the local port that accepts and never answers may be the
// user's own server, stopped or on a loaded machine: the shell says what
// it saw, without calling it someone else's.
func TestLocalPortThatDoesNotAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
	}()
	defer func() { l.Close(); <-done }()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	t.Setenv("SHAREDCONFIG_LOCAL_PORT", port)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"get", "k"}, strings.NewReader(""), &stdout, &stderr); code != exitStartup {
		t.Errorf("exit status %d, want %d", code, exitStartup)
	}
	got := stderr.String()
	if strings.Contains(got, "is not your") || !strings.Contains(got, "does not answer as your sharedconfig server") || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr: %q; want one line saying it does not answer, not that it is not yours", got)
	}
}
