package repl

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// keyboard is a terminal as the shell sees it: lines, then how input ends,
// and a Ctrl-C pressed during the commands of some lines.
type keyboard struct {
	lines  []string
	ctrlC  map[int]bool // line index: Ctrl-C while it runs
	end    error
	n      int
	interr int // Ctrl-Cs delivered
}

func (k *keyboard) ReadLine() (string, error) {
	if k.n == len(k.lines) {
		return "", k.end
	}
	k.n++
	return k.lines[k.n-1], nil
}

func (k *keyboard) OnInterrupt(cancel func()) (stop func()) {
	if k.ctrlC[k.n-1] {
		k.interr++
		cancel() // pressed before the command got anywhere
	}
	return func() {}
}

func newTestShell(t *testing.T) (*Shell, *strings.Builder) {
	t.Helper()
	var out strings.Builder
	sh := New(Options{Scope: "s", Name: "c", Out: &out})
	cfg, err := sharedconfig.Open(context.Background(), memlog.New("t"), sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh.Attach(cfg)
	return sh, &out
}

// Ctrl-C while a command runs cancels that command only: the shell says
// nothing was changed, and goes on with the next line.
func TestCtrlCCancelsTheCommand(t *testing.T) {
	sh, out := newTestShell(t)
	in := &keyboard{lines: []string{"PUT a, 1", "PUT b, 2", "GET a"}, ctrlC: map[int]bool{0: true}, end: io.EOF}
	if err := sh.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	want := "!!!! Cancelled: nothing was changed\n" +
		"**** Property 'b' added with value '2'\n" +
		"!!!! Property 'a' is undefined\n" +
		"**** Exiting...\n"
	if out.String() != want || in.interr != 1 {
		t.Fatalf("after %d Ctrl-Cs the shell printed:\n%s\nwant:\n%s", in.interr, out, want)
	}
}

// Leaving a terminal by Ctrl-D or Ctrl-C twice says QUIT's goodbye, once;
// QUIT says it once; a script's end says nothing.
func TestGoodbye(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Input
		want string
	}{
		{"ctrl-d", &keyboard{end: io.EOF}, "**** Exiting...\n"},
		{"ctrl-c twice", &keyboard{end: ErrInterrupted}, "**** Exiting...\n"},
		{"quit", &keyboard{lines: []string{"QUIT"}, end: io.EOF}, "**** Exiting...\n"},
		{"script quit", NewScript(strings.NewReader("QUIT\n")), "**** Exiting...\n"},
		{"script end", NewScript(strings.NewReader("")), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sh, out := newTestShell(t)
			if err := sh.Run(context.Background(), c.in); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.want {
				t.Fatalf("printed %q, want %q", out, c.want)
			}
		})
	}
}

func TestDescribeCancel(t *testing.T) {
	if got := describeCancel(statesync.ErrUnknownOutcome); !strings.Contains(got, "may or may not have been made") {
		t.Fatalf("an append of unknown outcome: %q", got)
	}
	if got := describeCancel(context.Canceled); got != "Cancelled: nothing was changed" {
		t.Fatalf("a plain cancel: %q", got)
	}
}
