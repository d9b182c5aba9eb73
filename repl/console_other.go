//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package repl

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"

	prompt "github.com/c-bata/go-prompt"
)

// pollConsole reads the terminal with go-prompt's own parser, polling it as
// go-prompt does, where the terminal cannot be read through Go's poller.
type pollConsole struct {
	in      prompt.ConsoleParser
	stopped atomic.Bool
}

func openConsole() (console, error) {
	in := prompt.NewStandardInputParser()
	if err := in.Setup(); err != nil {
		return nil, err
	}
	return &pollConsole{in: in}, nil
}

func (c *pollConsole) read(buf []byte) (int, error) {
	for !c.stopped.Load() {
		if k, err := c.in.Read(); err == nil && len(k) > 0 {
			return copy(buf, k), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, errors.Join(os.ErrClosed, c.in.TearDown())
}

func (c *pollConsole) size() (rows, cols uint16, ok bool) {
	defer func() {
		if recover() != nil { // go-prompt panics when it cannot tell
			ok = false
		}
	}()
	ws := c.in.GetWinSize()
	return ws.Row, ws.Col, true
}

func (c *pollConsole) stop() { c.stopped.Store(true) }

// newDisplayWriter is go-prompt's writer, on stdout, the only display here.
func newDisplayWriter(io.Writer) prompt.ConsoleWriter { return keepTitle{prompt.NewStdoutWriter()} }

// keepTitle is go-prompt's writer, except that it leaves the terminal's
// window title alone: go-prompt clears it after every line it reads.
type keepTitle struct{ prompt.ConsoleWriter }

func (keepTitle) ClearTitle() {}
