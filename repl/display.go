package repl

import (
	"bytes"
	"fmt"
	"io"

	prompt "github.com/c-bata/go-prompt"
)

// vt100Writer is go-prompt's VT100 writer, but writing to any terminal:
// go-prompt's own writes only to the descriptor of stdout or stderr, and
// the shell draws on the terminal its keys come from even when both are
// redirected (sharedconfig > out.txt 2>&1). The sequences are go-prompt's.
type vt100Writer struct {
	w   io.Writer
	buf []byte
}

var _ prompt.ConsoleWriter = (*vt100Writer)(nil)

func (v *vt100Writer) WriteRaw(data []byte) { v.buf = append(v.buf, data...) }

// Write, as go-prompt's, turns ESC into '?' in text it is given to show.
func (v *vt100Writer) Write(data []byte) {
	v.WriteRaw(bytes.ReplaceAll(data, []byte{0x1b}, []byte{'?'}))
}
func (v *vt100Writer) WriteRawStr(data string) { v.WriteRaw([]byte(data)) }
func (v *vt100Writer) WriteStr(data string)    { v.Write([]byte(data)) }

// Flush reports no error: go-prompt would print it on stderr. A terminal
// that cannot be written to has hung up, which its read reports.
func (v *vt100Writer) Flush() error {
	_, _ = v.w.Write(v.buf)
	v.buf = v.buf[:0]
	return nil
}

func (v *vt100Writer) csi(format string, a ...any) {
	v.buf = fmt.Appendf(append(v.buf, 0x1b, '['), format, a...)
}

// move writes a cursor move of n (none if 0), the other way if negative.
func (v *vt100Writer) move(n int, forward, backward byte) {
	switch {
	case n > 0:
		v.csi("%d%c", n, forward)
	case n < 0:
		v.csi("%d%c", -n, backward)
	}
}

func (v *vt100Writer) EraseScreen()      { v.csi("2J") }
func (v *vt100Writer) EraseUp()          { v.csi("1J") }
func (v *vt100Writer) EraseDown()        { v.csi("J") }
func (v *vt100Writer) EraseStartOfLine() { v.csi("1K") }
func (v *vt100Writer) EraseEndOfLine()   { v.csi("K") }
func (v *vt100Writer) EraseLine()        { v.csi("2K") }
func (v *vt100Writer) ShowCursor()       { v.csi("?12l\x1b[?25h") }
func (v *vt100Writer) HideCursor()       { v.csi("?25l") }

func (v *vt100Writer) CursorGoTo(row, col int) {
	if row == 0 && col == 0 {
		v.csi("H")
		return
	}
	v.csi("%d;%dH", row, col)
}
func (v *vt100Writer) CursorUp(n int)       { v.move(n, 'A', 'B') }
func (v *vt100Writer) CursorDown(n int)     { v.move(n, 'B', 'A') }
func (v *vt100Writer) CursorForward(n int)  { v.move(n, 'C', 'D') }
func (v *vt100Writer) CursorBackward(n int) { v.move(n, 'D', 'C') }
func (v *vt100Writer) AskForCPR()           { v.csi("6n") }
func (v *vt100Writer) SaveCursor()          { v.csi("s") }
func (v *vt100Writer) UnSaveCursor()        { v.csi("u") }
func (v *vt100Writer) ScrollDown()          { v.WriteRaw([]byte{0x1b, 'D'}) }
func (v *vt100Writer) ScrollUp()            { v.WriteRaw([]byte{0x1b, 'M'}) }

// SetTitle and ClearTitle do nothing: the window's title is the user's
// shell's, and go-prompt clears it after every line it reads.
func (v *vt100Writer) SetTitle(string) {}
func (v *vt100Writer) ClearTitle()     {}

func (v *vt100Writer) SetColor(fg, bg prompt.Color, bold bool) {
	attr := 0
	if bold {
		attr = 1
	}
	v.csi("%d;%d;%dm", attr, foreground(fg), foreground(bg)+10)
}

// foreground is the SGR code of a go-prompt colour as a foreground.
func foreground(c prompt.Color) int {
	switch {
	case c >= prompt.Black && c <= prompt.LightGray:
		return 30 + int(c-prompt.Black)
	case c >= prompt.DarkGray && c <= prompt.White:
		return 90 + int(c-prompt.DarkGray)
	}
	return 39 // DefaultColor
}
