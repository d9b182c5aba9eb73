//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package repl

import (
	"io"
	"os"

	prompt "github.com/c-bata/go-prompt"
	"golang.org/x/sys/unix"
)

// ttyConsole is /dev/tty, read through Go's poller so that stop can end a
// pending read.
type ttyConsole struct {
	f      *os.File
	fd     int           // f's; not f.Fd(), which would make reads blocking
	cooked *unix.Termios // the settings it had, put back while stopped
}

func openConsole() (console, error) {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return nil, err
	}
	c := &ttyConsole{f: f}
	rc, err := f.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { c.fd = int(fd) })
	}
	var t *unix.Termios
	if err == nil {
		t, err = unix.IoctlGetTermios(c.fd, ioctlGetTermios)
	}
	if err == nil {
		c.cooked = t
		err = c.setRaw()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// rawMode is go-prompt's raw mode: no echo, no line editing, no signals
// from keys, but output processing stays on.
func rawMode(t unix.Termios) *unix.Termios {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Lflag &^= unix.ECHO | unix.ICANON | unix.IEXTEN | unix.ISIG | unix.ECHONL
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return &t
}

func (c *ttyConsole) setRaw() error {
	return unix.IoctlSetTermios(c.fd, ioctlSetTermios, rawMode(*c.cooked))
}

func (c *ttyConsole) setCooked() error {
	return unix.IoctlSetTermios(c.fd, ioctlSetTermios, c.cooked)
}

func (c *ttyConsole) read(buf []byte) (int, error) { return c.f.Read(buf) }

func (c *ttyConsole) size() (rows, cols uint16, ok bool) {
	ws, err := unix.IoctlGetWinsize(c.fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, false
	}
	return ws.Row, ws.Col, true
}

func (c *ttyConsole) stop() { c.f.Close() }

func newDisplayWriter(display io.Writer) prompt.ConsoleWriter { return &vt100Writer{w: display} }
