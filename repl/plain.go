package repl

import (
	"io"
	"os"
	"strings"
	"sync"
)

// PlainTerminal reads a terminal that cannot be drawn on: one whose TERM
// is "dumb", as in Emacs's M-x shell, where go-prompt's escape sequences
// would show as text around every line. It prints a plain prompt and
// takes whole lines as the terminal's own line editing hands them over: no
// completion, no history. Ctrl-C there is the terminal's SIGINT, which
// ends the shell cleanly, as it ends a script.
type PlainTerminal struct {
	lines  *Script
	out    io.Writer
	prefix string

	mu      sync.Mutex
	waiting bool // the prompt is shown, a line not yet entered
}

// IsDumbTerminal: the terminal says it can only print text (TERM=dumb).
func IsDumbTerminal() bool { return os.Getenv("TERM") == "dumb" }

// NewPlainTerminal reads lines from in, prompting with prefix on out, the
// terminal.
func NewPlainTerminal(in io.Reader, out io.Writer, prefix string) *PlainTerminal {
	return &PlainTerminal{lines: NewScript(in), out: out, prefix: prefix}
}

// ReadLine implements Input.
func (t *PlainTerminal) ReadLine() (string, error) {
	t.mu.Lock()
	io.WriteString(t.out, t.prefix)
	t.waiting = true
	t.mu.Unlock()
	line, err := t.lines.ReadLine()
	t.mu.Lock()
	t.waiting = false
	t.mu.Unlock()
	if err == io.EOF {
		io.WriteString(t.out, "\n") // Ctrl-D leaves the cursor after the prompt
	}
	return line, err
}

// OnInterrupt makes the shell treat the terminal as a keyboard: a line at
// a time, its failures shown with the answers, Ctrl-D saying goodbye. No
// key reaches it to cancel a command with: Ctrl-C is a signal here.
func (t *PlainTerminal) OnInterrupt(func()) (stop func()) { return func() {} }

// PrintAbove prints lines (follow mode's) for w on lines of their own, not
// after the prompt, and prompts again, if w is the terminal's out. Nothing
// can be redrawn: what was typed of the line stays where it was, and
// still counts.
func (t *PlainTerminal) PrintAbove(w io.Writer, lines []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.waiting || w != t.out {
		return false
	}
	io.WriteString(t.out, "\n"+strings.Join(lines, "\n")+"\n"+t.prefix)
	return true
}
