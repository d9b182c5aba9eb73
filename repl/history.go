package repl

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// History is the shell's history file: the lines typed at the terminal,
// kept across sessions for Up and Down. It is private (0600): lines hold
// keys and values. Lines that look like they hold a secret, and lines
// typed with a leading space (as bash's ignorespace), are not written.
type History struct {
	path string
	max  int // lines kept; the file is cut back to them when twice as long
}

// OpenHistory is the history in the file at path, keeping max lines.
func OpenHistory(path string, max int) *History {
	return &History{path: path, max: max}
}

// Lines are the last lines kept, oldest first; none if the file cannot be
// read.
func (h *History) Lines() []string {
	lines, _ := h.read()
	return lines[max(len(lines)-h.max, 0):]
}

func (h *History) read() ([]string, error) {
	lines, _, err := h.readTail()
	return lines, err
}

// maxHistoryRead bounds what is read of the history file: its last bytes
// only, so that a file far larger than any history (written to by
// mistake) costs neither the memory nor the time to read it whole.
const maxHistoryRead = 4 << 20

// readTail returns the lines in the last maxHistoryRead bytes of the file
// (lines longer than MaxLineLength, and the partial line the cut falls
// in, left out), and whether it holds more than that.
func (h *History) readTail() (lines []string, cut bool, err error) {
	f, err := openOwn(h.path, os.O_RDONLY)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if cut = fi.Size() > maxHistoryRead; cut {
		if _, err := f.Seek(-maxHistoryRead, io.SeekEnd); err != nil {
			return nil, false, err
		}
	}
	b := make([]byte, min(fi.Size(), maxHistoryRead))
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	b = b[:n] // the file was cut short meanwhile
	if cut {
		_, b, _ = bytes.Cut(b, []byte{'\n'})
	}
	for l := range bytes.SplitSeq(b, []byte{'\n'}) {
		if len(l) > 0 && len(l) <= MaxLineLength {
			lines = append(lines, string(l))
		}
	}
	return lines, cut, nil
}

// Add appends line to the file, unless it should not be kept.
func (h *History) Add(line string) error {
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, " ") || strings.ContainsAny(line, "\r\n") || holdsSecret(line) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return err
	}
	f, err := openOwn(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return err
	}
	_ = f.Chmod(0o600) // a file made by hand may be readable by others
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return h.trim()
}

// trim cuts the file back to the last max lines once it holds twice as
// many (or more than is read of it), so that it is rewritten once in max
// lines, not on every line.
func (h *History) trim() error {
	lines, cut, err := h.readTail()
	if err != nil || len(lines) <= 2*h.max && !cut {
		return err
	}
	lines = lines[max(len(lines)-h.max, 0):]
	tmp := h.path + ".tmp"
	_ = os.Remove(tmp) // left by a trim cut short; O_EXCL refuses what is put back
	f, err := openOwn(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, h.path)
}

// errNotOwnHistory: the history file is not a regular file of this user's.
var errNotOwnHistory = errors.New("the history file is not a regular file of yours with no other name")

// openOwn opens a history file without following a symbolic link, and only
// if it is a regular file of this user's with no other name: a history in
// a directory another user may write (a HOME kept across sudo) must not
// lead the shell to read, append to, chmod or overwrite a file of that
// user's choosing.
func openOwn(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !ownRegular(fi) {
		err = errNotOwnHistory
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// secretWords mark a line that may hold a secret: a PUT of a password is
// shared in the config, but it need not also lie in a file in the home
// directory.
var secretWords = []string{"password", "passwd", "secret", "token", "credential", "apikey", "api_key", "api-key", "private"}

func holdsSecret(line string) bool {
	l := strings.ToLower(line)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
