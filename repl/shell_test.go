package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// output is a Shell's Out, safe to read while follow mode writes to it.
type output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns what was written since the last take, leaving it.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// take returns what was written since the last take.
func (o *output) take() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.b.String()
	o.b.Reset()
	return s
}

// openShell opens the config test/cfg on srv as writer and a shell on it.
func openShell(t *testing.T, srv *localserver.Server, writer string, o Options) (*Shell, *output) {
	t.Helper()
	return openShellOn(t, jstest.Connect(t, srv), writer, o)
}

// openShellOn is openShell on a connection of the test's.
func openShellOn(t *testing.T, nc *nats.Conn, writer string, o Options) (*Shell, *output) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := jetstream.OpenLog(ctx, nc, "test", "cfg", jetstream.LogOptions{Writer: writer})
	if err != nil {
		t.Fatal(err)
	}
	out := &output{}
	o.Scope, o.Name, o.Out = "test", "cfg", out
	sh := New(o)
	cfg, err := sharedconfig.Open(ctx, log, sharedconfig.Options{Trace: sh.Attempt})
	if err != nil {
		t.Fatal(err)
	}
	sh.Attach(cfg)
	t.Cleanup(sh.Close)
	return sh, out
}

// run executes lines and returns what the shell printed.
func run(sh *Shell, out *output, lines ...string) string {
	for _, l := range lines {
		sh.Execute(context.Background(), l)
	}
	return out.take()
}

// Strings another writer may store to attack whoever reads them in a
// terminal.
var hostile = map[string]string{
	"osc52":   "\x1b]52;c;cHduZWQ=\x07",           // write the clipboard
	"title":   "\x1b]0;owned\x1b\\",               // set the window title
	"csi":     "\x1b[2J\x1b[H",                    // clear the screen
	"c1":      "\u009b2J\u009d0;owned\u009c",      // the same with C1 controls
	"bidi":    "abc\u202edcba\u2066x\u2069\u200f", // reorder what is shown
	"newline": "v\n| fake | row |\r\n",            // a forged table row
	"nul":     "a\x00b\x7f",
	"lsep":    "a\u2028b\u2029c",
}

// unsafeRune reports a character of s that a terminal could obey, other
// than the newlines that end lines.
func unsafeRune(s string) (rune, bool) {
	if !utf8.ValidString(s) {
		return utf8.RuneError, true
	}
	for _, r := range s {
		if r != '\n' && !printableRune(r) {
			return r, true
		}
	}
	return 0, false
}

func printableRune(r rune) bool { return printable(string(r)) }

func TestTextOutputEscapesWhatOthersStored(t *testing.T) {
	srv := jstest.Server(t)
	evil, _ := openShell(t, srv, "\x1b]0;writer\x07\u202e", Options{})
	sh, out := openShell(t, srv, "reader", Options{Trace: true, Revisions: true})
	for name, s := range hostile {
		evil.Execute(context.Background(), "PUT "+Quote("k-"+name+s)+", "+Quote(s))
	}
	if err := sh.SetFollow(true); err != nil {
		t.Fatal(err)
	}
	defer sh.SetFollow(false)
	run(sh, out, "REFRESH")
	var lines []string
	for name, s := range hostile {
		key := Quote("k-" + name + s)
		lines = append(lines, "GET "+key, "HISTORY "+key, "REPLACE "+key+", "+Quote(s)+", "+Quote(s+"x"),
			"REMOVE "+key+", "+Quote(s+"y"), "PUT "+Quote(s+"x")+", "+Quote(s), "GET_ALL "+Quote(s),
			"FOLLOW "+s, s+"cmd a", "GET a, "+s, `PUT "`+s)
	}
	lines = append(lines, "GET_ALL", "LOG 100", "STATUS", "\xff\xfeFOO", "PUT k, \xff")
	text := run(sh, out, lines...)
	// Follow mode's lines, as another writer's change shows them.
	ops := []sharedconfig.Op{}
	for _, s := range hostile {
		ops = append(ops, sharedconfig.Op{Kind: "put", Key: s, Value: s}, sharedconfig.Op{Kind: "remove", Key: s})
	}
	sh.heard(sharedconfig.Change{Revision: 99, Writer: hostile["osc52"], Ops: ops}, "")
	text += out.take()

	if r, bad := unsafeRune(text); bad {
		t.Errorf("text output holds %U:\n%s", r, text)
	}
	for _, want := range []string{
		`'"\x1b]52;c;cHduZWQ=\a"'`, // GET and the messages: the value as typed
		`"\u009b2J\u009d0;owned\u009c"`,
		`"abc\u202edcba\u2066x\u2069\u200f"`,
		`"a\x00b\x7f"`,
		`"\x1b]0;writer\a\u202e"`,        // the writer, in LOG and HISTORY
		`by "\x1b]52;c;cHduZWQ=\a": PUT`, // follow mode
		`Unknown command: '"\xff\xfeFOO"'`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %s", want)
		}
	}
	// Every line of the GET_ALL table is a row of its own: the border, the
	// header, one row per key.
	table := run(sh, out, "GET_ALL")
	if got, want := strings.Count(table, "\n"), 1+3+len(hostile)*2+1; got != want {
		t.Errorf("GET_ALL printed %d lines, want %d:\n%s", got, want, table)
	}
}

func TestJSONOutputIsExactAndEscaped(t *testing.T) {
	srv := jstest.Server(t)
	sh, out := openShell(t, srv, "w", Options{JSON: true})
	for name, s := range hostile {
		text := run(sh, out, "PUT "+Quote(name)+", "+Quote(s), "GET "+Quote(name))
		if r, bad := unsafeRune(text); bad {
			t.Errorf("%s: JSON output holds %U: %q", name, r, text)
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: want 2 lines, got %q", name, text)
		}
		var got struct{ Result struct{ Value string } }
		if err := json.Unmarshal([]byte(lines[1]), &got); err != nil || got.Result.Value != s {
			t.Errorf("%s: GET's JSON reads back as %q, %v; want %q", name, got.Result.Value, err, s)
		}
	}
}

func TestScriptGoesOnAfterAnOverlongLine(t *testing.T) {
	sh, out := openShell(t, jstest.Server(t), "w", Options{})
	script := "PUT a, 1\nPUT b, " + strings.Repeat("x", MaxLineLength) + "\nGET a\n"
	if err := sh.Run(context.Background(), NewScript(strings.NewReader(script))); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`**** Property 'a' added with value '1'
!!!! line 2: skipped: the line is %d bytes long, and a line may be at most %d (a change must fit in one server message, 1 MiB by default)
**** The value of property 'a' is '1'
`, MaxLineLength+7, MaxLineLength)
	if got := out.take(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A line that long typed at a terminal is refused the same way.
	if got := run(sh, out, "PUT b, "+strings.Repeat("x", MaxLineLength)); !strings.HasPrefix(got, "!!!! skipped: the line is") {
		t.Errorf("a long typed line: %.100s", got)
	}
	if sh.Failures() != 2 {
		t.Errorf("Failures() = %d, want 2", sh.Failures())
	}
}

func TestCompletionOffersNothingATerminalWouldObey(t *testing.T) {
	sh, out := openShell(t, jstest.Server(t), "w", Options{})
	for name, s := range hostile {
		run(sh, out, "PUT "+Quote("k"+s)+", v", "PUT "+Quote("k-"+name)+", "+Quote(s))
	}
	got := sh.Complete("GET k")
	if len(got) != len(hostile) {
		t.Errorf("GET k completes to %d keys, want the %d printable ones: %q", len(got), len(hostile), got)
	}
	for _, s := range got {
		if r, bad := unsafeRune(s.Text + s.Description); bad {
			t.Errorf("completion %q holds %U", s, r)
		}
	}
}
