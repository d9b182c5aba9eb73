package testmain_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// In a -race build the tests run with GORACE asking for no sleep at exit,
// and with whatever else GORACE asked for.
func TestRaceBinarySleepsNotAtExit(t *testing.T) {
	if !raceEnabled {
		t.Skip("not built with -race")
	}
	if os.Getenv("TESTMAIN_PRINT_GORACE") != "" {
		os.Stdout.WriteString("GORACE=" + os.Getenv("GORACE") + "\n")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRaceBinarySleepsNotAtExit$", "-test.v")
	c.Env = append(os.Environ(), "TESTMAIN_PRINT_GORACE=1", "GORACE=halt_on_error=1", "SHAREDCONFIG_TESTMAIN_EXECED=")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "GORACE=halt_on_error=1 atexit_sleep_ms=0\n") {
		t.Fatalf("started with GORACE=halt_on_error=1, the tests saw:\n%s", out)
	}
}
