package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The one-shot commands' JSON is escaped as the shell's is: a writer name or
// damage from a stream cannot drive the terminal that shows it.
func TestAnswerJSONEscapesWhatCouldDriveATerminal(t *testing.T) {
	var out bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	answer(cmd, &rootFlags{output: "json"}, "REPAIR", true, map[string]any{"writer": "\u202eevil\u009b2J"}, 7)
	got := out.String()
	if !strings.Contains(got, `\u202eevil\u009b2J`) || strings.ContainsAny(got, "\u202e\u009b") {
		t.Fatalf("answer printed %q", got)
	}
}
