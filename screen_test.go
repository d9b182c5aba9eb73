//go:build linux

package main

import (
	"strings"
	"unicode/utf8"
)

// screen is the little of a VT100 that go-prompt's drawing uses: text with
// xterm's deferred wrap, CR, LF, Tab, cursor moves (CSI A B C D, ESC D, ESC M)
// and erasing (CSI J, CSI K). Colours, modes and titles are skipped. It
// shows what the user sees, where the bytes alone would show text that was
// drawn over. The screen grows downwards instead of scrolling.
type screen struct {
	cols     int
	rows     [][]rune
	row, col int
}

func render(out string, cols int) []string {
	s := newScreen(cols)
	s.write(out)
	return s.lines()
}

func newScreen(cols int) *screen { return &screen{cols: cols, rows: [][]rune{nil}} }

func (s *screen) write(out string) {
	for len(out) > 0 {
		out = s.feed(out)
	}
}

// lines is what the screen shows, a line a row.
func (s *screen) lines() []string {
	lines := make([]string, len(s.rows))
	for i, r := range s.rows {
		lines[i] = strings.TrimRight(string(r), " ")
	}
	return lines
}

// feed takes one character or sequence from out and returns the rest.
func (s *screen) feed(out string) string {
	switch c := out[0]; {
	case c == '\r':
		s.col = 0
	case c == '\n':
		s.move(1, 0)
	case c == '\t': // to the next tab stop, every eight columns
		s.col = min((s.col/8+1)*8, s.cols-1)
	case c == 0x1b && len(out) > 1 && out[1] == '[':
		i := 2
		for i < len(out) && (out[i] < 0x40 || out[i] > 0x7e) {
			i++
		}
		if i < len(out) {
			s.csi(out[2:i], out[i])
		}
		return out[min(i+1, len(out)):]
	case c == 0x1b && len(out) > 1 && out[1] == ']':
		if end := strings.IndexByte(out, 0x07); end >= 0 {
			return out[end+1:]
		}
		return ""
	case c == 0x1b && len(out) > 1:
		if out[1] == 'D' {
			s.move(1, 0)
		} else if out[1] == 'M' {
			s.move(-1, 0)
		}
		return out[2:]
	case c >= 0x20:
		r, n := utf8.DecodeRuneInString(out)
		s.put(r)
		return out[n:]
	}
	return out[1:]
}

func (s *screen) csi(params string, final byte) {
	n := 1
	if params != "" && params[0] >= '0' && params[0] <= '9' {
		n = 0
		for _, d := range params {
			n = n*10 + int(d-'0')
		}
	}
	switch final {
	case 'A':
		s.move(-n, 0)
	case 'B':
		s.move(n, 0)
	case 'C':
		s.move(0, n)
	case 'D':
		s.move(0, -n)
	case 'J':
		s.rows = s.rows[:s.row+1]
		fallthrough
	case 'K':
		s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
	}
}

func (s *screen) move(down, right int) {
	s.col = max(0, min(s.col, s.cols-1)+right) // a pending wrap is the last column
	if right == 0 && down != 0 {
		s.col = min(s.col, s.cols-1)
	}
	s.row = max(0, s.row+down)
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
}

func (s *screen) put(r rune) {
	if s.col >= s.cols {
		s.col = 0
		s.move(1, 0)
	}
	line := s.rows[s.row]
	for len(line) <= s.col {
		line = append(line, ' ')
	}
	line[s.col] = r
	s.rows[s.row] = line
	s.col++
}
