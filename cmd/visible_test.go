package cmd

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Errors carry what users and files gave (paths, URLs, flags, context
// names). Each is printed as one line, with nothing in it that could drive
// the terminal: no escape sequence, no other control character, no bidi
// override, no byte that is not UTF-8.
func TestErrorsAreOneVisibleLine(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	hostile := "x\x1b]0;owned\a\x1b[2J\r\nforged line\u202e\xff"
	for _, args := range [][]string{
		{"-f", "/nonexistent/" + hostile},
		{"import", "/nonexistent/" + hostile},
		{"--context", hostile, "get", "k"},
		{"--server", "nats://" + hostile + ":1", "get", "k"},
		{"--" + hostile},
		{"-o", hostile, "get", "k"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != exitStartup {
			t.Errorf("%q: exit status %d, want %d", args, code, exitStartup)
		}
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if !strings.HasPrefix(first, "sharedconfig: ") || !strings.Contains(first, "forged line") {
			t.Errorf("%q: the first line of stderr is %q; want the whole error on it", args, first)
		}
		if !utf8.ValidString(first) || strings.IndexFunc(first, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
			t.Errorf("%q: stderr holds characters that are not printable: %q", args, first)
		}
	}
}

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain: /a b/ü, ok":  "plain: /a b/ü, ok",
		"a\x1b[2Jb":          `a\x1b[2Jb`,
		"\t\r\n\x00\x7f":     `\t\r\n\x00\x7f`,
		"\u202eabc\u0085":    `\u202eabc\u0085`,
		"bad \xff\xfe bytes": `bad \xff\xfe bytes`,
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %s, want %s", in, got, want)
		}
	}
}
