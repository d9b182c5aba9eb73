package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// The build line README gives must build the binary it names: not into a
// package's folder (./sharedconfig is one), and somewhere git ignores.
func TestReadmeBuildLine(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^go build -o (\S+) \.`).FindAllSubmatch(readme, -1)
	if len(lines) == 0 {
		t.Fatal("README gives no 'go build -o PATH .' line")
	}
	git, gitErr := exec.LookPath("git")
	for _, l := range lines {
		out := string(l[1])
		if info, err := os.Stat(out); err == nil && info.IsDir() {
			t.Errorf("README builds into %s, which is a directory of the repository", out)
		}
		if gitErr != nil {
			continue
		}
		err := exec.Command(git, "check-ignore", "-q", "--no-index", out).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			t.Errorf("README builds %s, which git does not ignore", out)
		}
	}
}

// STATUS names the shell's own process, so that an example can stop it
// (under go run, the pid of go is not the shell's).
func TestStatusShowsPid(t *testing.T) {
	srv := jstest.Server(t)
	p := startREPL(t, "p", "--server", srv.ClientURL(), "--scope", "pid")
	p.send("STATUS")
	want := fmt.Sprintf("**** Process:   pid %d", p.cmd.Process.Pid)
	for {
		if got := p.next(); got == want {
			break
		}
	}
}

// get --print-value-only (--raw) prints the value alone, byte for byte,
// with no newline added when stdout is not a terminal: $(...) and files
// get exactly what was put.
func TestGetValueOnlyIsByteExact(t *testing.T) {
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "raw"}
	value := "two\nlines, \"quoted\"\ttabbed\n"
	if _, stderr, code := runShell(t, "", append(args, "put", "k", value)...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	for _, flag := range []string{"--print-value-only", "--raw"} {
		stdout, stderr, code := runShell(t, "", append(args, "get", flag, "k")...)
		if code != 0 || stdout != value || stderr != "" {
			t.Errorf("get %s: exit %d, stdout %q, stderr %q; want 0, %q, nothing", flag, code, stdout, stderr, value)
		}
	}
	stdout, stderr, code := runShell(t, "", append(args, "get", "--raw", "nope")...)
	if code != 1 || stdout != "" || stderr != "!!!! Property 'nope' is undefined\n" {
		t.Errorf("get --raw of an undefined key: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// An import too big for one entry (a 2 MB export) is refused before
// anything is written, saying how to split the file.
func TestImportTooBigSaysHowToSplit(t *testing.T) {
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "big"}
	props := map[string]string{}
	for i := range 2000 {
		props[fmt.Sprintf("key.%04d", i)] = strings.Repeat("v", 1000)
	}
	b, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runShell(t, "", append(args, "put", "before", "1")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runShell(t, "", append(args, "import", file)...)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "nothing was written") || !strings.Contains(stderr, "split "+file+" into files that each fit") {
		t.Errorf("import: exit %d, stdout %q, stderr %q; want 1 and how to split on stderr", code, stdout, stderr)
	}
	stdout, _, _ = runShell(t, "", append(args, "keys")...)
	if stdout != "before\n" {
		t.Errorf("after the refused import the keys are %q, want only before", stdout)
	}
}

// A config whose stream holds no entry yet (created, never written: an
// interrupted first open) has no revision: list -o json leaves it out and
// says why, rather than a revision 0 no entry has.
func TestListEmptyConfig(t *testing.T) {
	srv := jstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := jetstream.OpenLog(context.Background(), nc, "empty", "cfg", jetstream.LogOptions{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runShell(t, "", "--server", srv.ClientURL(), "-o", "json", "list")
	if code != 0 {
		t.Fatalf("list: exit %d, %s", code, stderr)
	}
	var got struct {
		Result struct{ Configs []map[string]any }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got.Result.Configs) != 1 {
		t.Fatalf("list -o json: %q (%v)", stdout, err)
	}
	c := got.Result.Configs[0]
	if _, has := c["revision"]; has || c["note"] != "no entries: created, never written" || c["properties"] != 0.0 {
		t.Errorf("the empty config is listed as %v; want no revision, a note saying why, 0 properties", c)
	}
}
