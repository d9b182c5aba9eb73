package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// A one-shot command starved by other writers (an import among puts in a
// loop) says so as the shell does, not that the server did not answer.
func TestFailedStarvedCommandIsNotBlamedOnTheServer(t *testing.T) {
	var stderr bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetErr(&stderr)
	f := &rootFlags{output: "text", timeout: time.Minute}
	err := &turns.ContendedError{Lost: 133, Err: fmt.Errorf("SC_1_S_IMP: the server did not answer in time: %w", context.DeadlineExceeded)}
	failed(cmd, f, "IMPORT", fmt.Errorf("import: %w", err))
	want := "!!!! Error: gave up after losing 133 tries in a row to other writers within 1m0s (the server is answering; try again, or use a longer --timeout)\n"
	if got := stderr.String(); got != want {
		t.Errorf("failed wrote %q, want %q", got, want)
	}
	if strings.Contains(stderr.String(), "did not answer") {
		t.Error("the starved command is blamed on the server")
	}
}
