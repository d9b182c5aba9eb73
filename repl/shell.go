// Package repl is the sharedconfig command shell: a line is parsed, looked up
// in one command table (which also drives the argument checks, HELP and
// completion), run against a shared config, and its answer printed. Terminal
// and piped input go through the same loop behind the Input interface.
package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Input is where lines come from: a terminal or a script.
type Input interface {
	// ReadLine returns the next line without its line ending, or io.EOF.
	ReadLine() (string, error)
}

// Shell runs commands against one shared config.
type Shell struct {
	cfg     *sharedconfig.Config
	name    string
	out     io.Writer
	timeout time.Duration
	failed  int
}

// Options configure a Shell.
type Options struct {
	// Name is the config's name, shown by GET_ALL.
	Name string
	// Out receives every answer.
	Out io.Writer
	// Timeout bounds each command's I/O; 0 means 5s.
	Timeout time.Duration
}

// New returns a shell on cfg.
func New(cfg *sharedconfig.Config, o Options) *Shell {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	return &Shell{cfg: cfg, name: o.Name, out: o.Out, timeout: o.Timeout}
}

// Failures is how many lines failed: could not be parsed or run, or ran into
// an error. A command that answers "no" ("was NOT replaced") did not fail.
func (sh *Shell) Failures() int { return sh.failed }

// PrintHelp prints the help text, as the interactive shell does on start.
func (sh *Shell) PrintHelp() { fmt.Fprintln(sh.out, helpText()) }

// Run executes lines from in until QUIT, the end of input, or ctx ends.
func (sh *Shell) Run(ctx context.Context, in Input) error {
	for {
		line, err := readLine(ctx, in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if sh.Execute(ctx, line) == quitNow {
			return nil
		}
	}
}

// readLine reads one line, giving up when ctx ends. Reads cannot be
// interrupted, so a read abandoned that way finishes in the background.
func readLine(ctx context.Context, in Input) (string, error) {
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := in.ReadLine()
		done <- result{line, err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Execute runs one line. Blank lines and lines starting with '#' do nothing.
func (sh *Shell) Execute(ctx context.Context, text string) outcome {
	if strings.HasPrefix(strings.TrimSpace(text), "#") {
		return ok
	}
	line, err := Parse(text)
	if err != nil {
		sh.warn("%v", err)
		sh.failed++
		return failed
	}
	if line.Word == "" {
		return ok
	}
	c := lookup(line.Word)
	if c == nil {
		sh.warn("Unknown command: '%s' (HELP lists the commands)", line.Word)
		sh.failed++
		return failed
	}
	if n := len(line.Args); n < c.min || (c.max >= 0 && n > c.max) {
		msg := c.usage
		if msg == "" {
			msg = c.name + " takes no parameters"
		}
		if c.max >= 0 && n > c.max {
			msg = fmt.Sprintf("%s -- got %d: '%s' (quote a parameter that holds a comma)", msg, n, strings.Join(line.Args, "', '"))
		}
		sh.warn("%s", msg)
		sh.failed++
		return failed
	}
	cctx, cancel := context.WithTimeout(ctx, sh.timeout)
	defer cancel()
	result := c.run(cctx, sh, line.Args)
	if result == failed {
		sh.failed++
	}
	return result
}

// say prints an answer with the original's "**** " prefix.
func (sh *Shell) say(format string, args ...any) {
	fmt.Fprintf(sh.out, "**** "+format+"\n", args...)
}

// warn prints a warning with the original's "!!!! " prefix.
func (sh *Shell) warn(format string, args ...any) {
	fmt.Fprintf(sh.out, "!!!! "+format+"\n", args...)
}

// fail reports an error on one line.
func (sh *Shell) fail(err error) outcome {
	switch {
	case errors.Is(err, statesync.ErrUnknownOutcome):
		sh.warn("Error: no answer from the server within %s: the change may or may not have been made; REFRESH, then look (%v)", sh.timeout, err)
	case errors.Is(err, context.DeadlineExceeded):
		sh.warn("Error: no answer from the server within %s; is it running? (%v)", sh.timeout, err)
	default:
		sh.warn("Error: %v", err)
	}
	return failed
}
