package cmd

import (
	"bytes"
	"os"
	"path/filepath"
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

// A hostile import file (nested millions deep, cut short in a character,
// of an export format this program does not read) is refused in one line
// on stderr, exit status 2, and nothing is written: the config it names is
// not even created.
func TestHostileImportFileIsOneLine(t *testing.T) {
	newCacheEnv(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"deep.json":    `{"k": ` + strings.Repeat("[", 20<<20),
		"objects.json": strings.Repeat(`{"a":`, 4<<20),
		"cut.json":     "{\"k\": \"\xc3",
		"v2.json":      `{"format": "sharedconfig-export/2", "properties": {"k": {"value": "v"}}}`,
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := Main([]string{"-s", "cache", "-n", "hostile", "import", file}, strings.NewReader(""), &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != exitStartup || len(lines) != 1 || !strings.HasPrefix(lines[0], "sharedconfig: "+file+": ") || stdout.Len() != 0 {
			t.Errorf("import %s: exit %d, stdout %q, stderr %.300q; want %d and one line naming the file", name, code, stdout.String(), stderr.String(), exitStartup)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-s", "cache", "-n", "hostile", "get-all"}, strings.NewReader(""), &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "no config cache/hostile") {
		t.Errorf("after the refused imports: exit %d, %s%s; want no config", code, stdout.String(), stderr.String())
	}
}
