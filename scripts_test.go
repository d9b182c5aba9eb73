package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

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
