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
	answer(cmd, &rootFlags{output: "json"}, "REPAIR", true, map[string]any{"writer": "\u202eevil\u009b2J"}, at(7))
	got := out.String()
	if !strings.Contains(got, `\u202eevil\u009b2J`) || strings.ContainsAny(got, "\u202e\u009b") {
		t.Fatalf("answer printed %q", got)
	}
}

// import reads at most maxImportFile: /dev/zero, or a pipe that never
// ends, is refused once it has given that much, not read until memory
// runs out.
func TestImportReadsABoundedFile(t *testing.T) {
	defer func(was int64) { maxImportFile = was }(maxImportFile)
	maxImportFile = 1 << 20
	for name, read := range map[string]func() ([]byte, error){
		"/dev/zero":       func() ([]byte, error) { return readImportFile(nil, "/dev/zero") },
		"an endless pipe": func() ([]byte, error) { return readImportFile(endless{}, "-") },
	} {
		data, err := read()
		if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") || len(data) != 0 {
			t.Errorf("%s: read %d bytes, %v; want it refused as larger than 1 MiB", name, len(data), err)
		}
	}
	if data, err := readImportFile(strings.NewReader(`{"k":"v"}`), "-"); err != nil || string(data) != `{"k":"v"}` {
		t.Errorf("a small file: %q, %v", data, err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
