package repl

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	prompt "github.com/c-bata/go-prompt"
	"golang.org/x/term"
)

// ErrInterrupted: the user pressed Ctrl-C twice at the prompt.
var ErrInterrupted = errors.New("interrupted")

// Terminal reads lines from the terminal with go-prompt: a prompt, command
// and key completion, and history (Up and Down). Ctrl-D on an empty line
// ends input; Ctrl-C clears the line, and a second Ctrl-C in a row quits.
//
// go-prompt v0.2.6 leaves the terminal in raw mode after each line (it
// restores a copy of the settings that it had made raw), so Terminal saves
// the settings itself and puts them back after every line and on Close.
type Terminal struct {
	p      *prompt.Prompt
	keys   *keyWatcher
	fd     int
	saved  *term.State
	closed bool
	out    io.Writer

	mu      sync.Mutex
	reading bool     // a line is being typed
	pending []string // lines to print above it
}

// NewTerminal starts reading the terminal on stdin. It must only be called
// when stdin is a terminal: go-prompt panics without one.
func NewTerminal(prefix string, complete func(before string) []Suggestion) (*Terminal, error) {
	fd := int(os.Stdin.Fd())
	saved, err := term.GetState(fd)
	if err != nil {
		return nil, err
	}
	keys := &keyWatcher{ConsoleParser: prompt.NewStandardInputParser(), inject: make(chan []byte, 1)}
	t := &Terminal{keys: keys, fd: fd, saved: saved, out: os.Stdout}
	t.p = prompt.New(
		func(string) {}, // lines are taken with Input, not run by go-prompt
		func(d prompt.Document) []prompt.Suggest {
			var out []prompt.Suggest
			for _, s := range complete(d.TextBeforeCursor()) {
				out = append(out, prompt.Suggest{Text: s.Text, Description: s.Description})
			}
			return out
		},
		prompt.OptionParser(keys),
		prompt.OptionPrefix(prefix),
		prompt.OptionCompletionWordSeparator(" ,"),
		prompt.OptionMaxSuggestion(8),
		prompt.OptionSetExitCheckerOnInput(func(_ string, breakline bool) bool {
			return !breakline && keys.ctrlC.Load() >= 2
		}),
		// The key PrintAbove injects: print the pending lines, after which
		// go-prompt draws the prompt and the line being typed again.
		prompt.OptionAddKeyBind(prompt.KeyBind{Key: prompt.Ignore, Fn: func(*prompt.Buffer) { t.flush(true) }}),
	)
	return t, nil
}

// ignoreKey is a key go-prompt reads as Ignore: it does nothing but redraw.
var ignoreKey = []byte{0x1b, 0x5b, 0x45}

// PrintAbove prints lines above the line being typed, if one is.
func (t *Terminal) PrintAbove(lines []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reading {
		return false
	}
	t.pending = append(t.pending, lines...)
	select {
	case t.keys.inject <- ignoreKey:
	default: // one is on its way already
	}
	return true
}

// flush prints the pending lines. In raw mode (inPrompt) it first clears the
// prompt line; go-prompt then redraws it below, since its cursor moves back
// to column 0 at most.
func (t *Terminal) flush(inPrompt bool) {
	t.mu.Lock()
	lines := t.pending
	t.pending = nil
	t.mu.Unlock()
	if len(lines) == 0 {
		return
	}
	var b strings.Builder
	if inPrompt {
		b.WriteString("\r\x1b[J")
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	io.WriteString(t.out, b.String())
}

// ReadLine implements Input.
func (t *Terminal) ReadLine() (string, error) {
	t.mu.Lock()
	t.reading = true
	t.mu.Unlock()
	line := t.p.Input()
	t.mu.Lock()
	t.reading = false
	t.mu.Unlock()
	t.flush(false) // lines that came as the line was entered
	// Put the terminal back in the state it was in, so that answers print
	// normally and Ctrl-C during a command is a signal again.
	if err := term.Restore(t.fd, t.saved); err != nil {
		return "", err
	}
	switch {
	case t.keys.ctrlC.Load() >= 2:
		return "", ErrInterrupted
	case line == "" && t.keys.last.Load() == ctrlD:
		return "", io.EOF
	}
	return line, nil
}

// Close restores the terminal. It is safe to call more than once.
func (t *Terminal) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	return term.Restore(t.fd, t.saved)
}

const (
	ctrlC = 0x03
	ctrlD = 0x04
)

// keyWatcher passes keys through to go-prompt and remembers the last one and
// how many Ctrl-Cs came in a row, which go-prompt's Input does not report.
// go-prompt reads keys on one goroutine and handles them on another, hence
// the atomics.
type keyWatcher struct {
	prompt.ConsoleParser
	last   atomic.Uint32 // the last key, if it was one byte
	ctrlC  atomic.Int32
	inject chan []byte // keys to hand go-prompt as if typed
}

func (k *keyWatcher) Read() ([]byte, error) {
	select {
	case b := <-k.inject:
		return b, nil
	default:
	}
	b, err := k.ConsoleParser.Read()
	if len(b) == 0 {
		return b, err // go-prompt polls; nothing was typed
	}
	var key uint32
	if len(b) == 1 {
		key = uint32(b[0])
	}
	k.last.Store(key)
	if key == ctrlC {
		k.ctrlC.Add(1)
	} else {
		k.ctrlC.Store(0)
	}
	return b, err
}
