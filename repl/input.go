package repl

import (
	"bufio"
	"io"
	"strings"
)

// Script reads lines from a file or a pipe. Every line is read in order and
// none is lost; a last line without a newline still counts.
type Script struct{ r *bufio.Reader }

// NewScript reads lines from r.
func NewScript(r io.Reader) *Script { return &Script{bufio.NewReader(r)} }

// ReadLine implements Input.
func (s *Script) ReadLine() (string, error) {
	line, err := s.r.ReadString('\n')
	if err != nil && (line == "" || err != io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
