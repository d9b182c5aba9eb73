package repl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineLength bounds a script line: twice the server's default largest
// message (1 MiB), which a change must fit in, leaving room for quoted
// escapes. A longer line is refused without being held in memory whole.
const MaxLineLength = 2 << 20

// LineTooLongError is a script line longer than MaxLineLength. It was read
// to its end and dropped; the next ReadLine goes on with the next line.
type LineTooLongError struct {
	Length int64 // bytes, without the line ending
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("skipped: the line is %d bytes long, and a line may be at most %d (a change must fit in one server message, 1 MiB by default)", e.Length, MaxLineLength)
}

// Script reads lines from a file or a pipe. Every line is read in order and
// none is lost; a last line without a newline still counts.
type Script struct {
	r *bufio.Reader
	n int // lines read so far
}

// NewScript reads lines from r.
func NewScript(r io.Reader) *Script { return &Script{r: bufio.NewReaderSize(r, 64<<10)} }

// LineNumber is the number of the line the last ReadLine returned (or
// refused), counting from 1.
func (s *Script) LineNumber() int { return s.n }

// ReadLine implements Input. A line longer than MaxLineLength is read to its
// end in pieces and dropped, and reported as a *LineTooLongError.
func (s *Script) ReadLine() (string, error) {
	var line []byte
	var length int64
	for {
		piece, err := s.r.ReadSlice('\n')
		length += int64(len(piece))
		if length <= MaxLineLength+2 { // + "\r\n"
			line = append(line, piece...)
		} else {
			line = nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (length == 0 || err != io.EOF) {
			return "", err
		}
		s.n++
		length -= int64(len(piece) - len(bytes.TrimRight(piece, "\r\n"))) // the line ending
		if length > MaxLineLength {
			return "", &LineTooLongError{Length: length}
		}
		text := bytes.TrimRight(line, "\r\n")
		if s.n == 1 {
			// Editors on Windows start a UTF-8 file with a byte order mark;
			// it is not part of the first command.
			text = bytes.TrimPrefix(text, []byte("\ufeff"))
		}
		return string(text), nil
	}
}
