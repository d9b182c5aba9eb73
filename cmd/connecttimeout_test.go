package cmd

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"
)

// A server that takes the connection and then says nothing (stopped with
// SIGSTOP, say) is waited for as long as --timeout, at least a second, not
// for nats.go's 5 s default.
func TestConnectingToASilentServerKeepsToTheTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := Main([]string{"--server", "nats://" + ln.Addr().String(), "--timeout", "1s", "get", "a"}, strings.NewReader(""), &stdout, &stderr)
	took := time.Since(began)
	if code != exitStartup || took > 3*time.Second {
		t.Fatalf("exit status %d after %v, stderr %q; want %d within about 1 s", code, took.Round(time.Millisecond), stderr.String(), exitStartup)
	}
	t.Logf("%v: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
}
