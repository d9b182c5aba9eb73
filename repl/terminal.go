package repl

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"

	prompt "github.com/c-bata/go-prompt"
	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// ErrInterrupted: the user pressed Ctrl-C twice at the prompt.
var ErrInterrupted = errors.New("interrupted")

// Terminal reads lines from the terminal with go-prompt: a prompt, command
// and key completion, and history (Up and Down). Ctrl-D on an empty line
// ends input; Ctrl-C clears the line, and a second Ctrl-C in a row quits.
// Ctrl-C while a command runs cancels the command instead (OnInterrupt).
// Ctrl-Z suspends the shell, as in any job-control shell (suspend_unix.go).
//
// go-prompt v0.2.6 is only given keys: Terminal owns the terminal. It puts
// it in raw mode once, for the whole session, and one goroutine reads it,
// because go-prompt on its own:
//   - takes whatever one read returns as one key, so a paste of several
//     lines ran none of them; here each read is split into keys, handed out
//     one at a time;
//   - switches raw mode off while a command runs, so keys typed meanwhile
//     were echoed, edited by the terminal's line discipline and partly lost
//     (Ctrl-D, for one), and Ctrl-C became a SIGINT; here they wait in a
//     queue for the next line, and Ctrl-C is a key the reader sees;
//   - leaves the terminal raw after each line (it restores a copy it made
//     raw itself); here go-prompt never touches the settings, and Close
//     puts back those saved at the start.
type Terminal struct {
	p       *prompt.Prompt
	keys    *keyQueue
	console console
	stdin   int // for the terminal's settings
	saved   *term.State
	out     io.Writer // the display
	history *History  // nil: lines are not kept
	prefix  string    // the prompt
	// stopWatch stops handling SIGTSTP, SIGCONT and SIGWINCH; nil when
	// the shell does not (suspend_unix.go).
	stopWatch  func()
	jobControl bool // Ctrl-Z suspends

	closeOnce sync.Once
	readDone  chan struct{}

	mu        sync.Mutex
	reading   bool     // go-prompt is reading a line
	pending   []string // lines to print above it
	interrupt func()   // cancels the running command, if one is running
	early     bool     // Ctrl-C came before the command's interrupt was set
	resized   bool     // the line is read on in a new width (ReadLine)
	continued bool     // the process was stopped; the cursor is below the line
	dropCopy  bool     // go-prompt's copy of the line ended for a resize goes
	ended     string   // the line as go-prompt last ended it
	typed     string   // the line as go-prompt last drew it
	before    string   // the part of it before the cursor
	menu      bool     // with completions below it
}

// TerminalOptions configure a Terminal.
type TerminalOptions struct {
	Prefix   string // the prompt
	Complete func(before string) []Suggestion
	// History, if set, gives Up and Down the lines of past sessions and
	// keeps the lines typed in this one.
	History *History
	// Display is the terminal the prompt and the line typed are drawn
	// on; nil means stdout. The shell's answers may go elsewhere: lines
	// are printed above the line typed only for a writer that is Display.
	Display io.Writer
}

// ctrlCHint is said after a first Ctrl-C on an empty line, which a user may
// have pressed to leave: a second one does.
const ctrlCHint = "(Ctrl-D or QUIT to leave)"

// NewTerminal starts reading the terminal. It must only be called when
// stdin is a terminal.
func NewTerminal(o TerminalOptions) (*Terminal, error) {
	stdin := int(os.Stdin.Fd())
	saved, err := term.GetState(stdin)
	if err != nil {
		return nil, err
	}
	// Before prompt.New, which opens /dev/tty too but panics if it cannot.
	con, err := openConsole()
	if err != nil {
		return nil, err
	}
	keys := &keyQueue{console: con}
	if o.Display == nil {
		o.Display = os.Stdout
	}
	t := &Terminal{keys: keys, console: con, stdin: stdin, saved: saved, out: o.Display, history: o.History, prefix: o.Prefix, readDone: make(chan struct{})}
	t.p = prompt.New(
		func(string) {}, // lines are taken with Input, not run by go-prompt
		t.completer(o.Complete),
		prompt.OptionParser(keys),
		prompt.OptionWriter(newDisplayWriter(o.Display)),
		prompt.OptionPrefix(o.Prefix),
		prompt.OptionHistory(offered(o.History)),
		// Called as a line ends, Enter or Ctrl-C, with the line as it was.
		prompt.OptionBreakLineCallback(func(d *prompt.Document) {
			t.mu.Lock()
			t.ended = d.Text
			t.mu.Unlock()
			if d.Text == "" && keys.firstCtrlC() && !t.resizing() {
				io.WriteString(t.out, ctrlCHint+"\n")
			}
		}),
		prompt.OptionCompletionWordSeparator(" ,"),
		prompt.OptionMaxSuggestion(8),
		prompt.OptionSetExitCheckerOnInput(func(in string, breakline bool) bool {
			return !breakline && (keys.ctrlCsInARow() >= 2 || t.wrapsAfterResize(in))
		}),
		// The key PrintAbove injects: print the pending lines, after which
		// go-prompt draws the prompt and the line being typed again.
		prompt.OptionAddKeyBind(prompt.KeyBind{Key: prompt.Ignore, Fn: func(b *prompt.Buffer) { t.flush(true, t.rowsAbove(b)) }}),
		// Ctrl-D on a line with text, and a first Ctrl-C, did not end the
		// line: the keys after them may be handed out.
		prompt.OptionAddKeyBind(prompt.KeyBind{Key: prompt.ControlD, Fn: func(*prompt.Buffer) { keys.release() }}),
		prompt.OptionAddKeyBind(prompt.KeyBind{Key: prompt.ControlC, Fn: func(*prompt.Buffer) {
			if keys.ctrlCsInARow() < 2 {
				keys.release()
			}
		}}),
	)
	t.stopWatch = t.watchSignals()
	go t.readKeys()
	return t, nil
}

// offered is what Up offers of the history: its lines as shown, but for
// those with control characters, which cannot be typed (unknown keys'
// escape sequences, say), and would be drawn with go-prompt's cursor
// astray, or obeyed by the terminal.
func offered(h *History) []string {
	if h == nil {
		return nil
	}
	var past []string
	for _, l := range h.Lines() {
		if printable(strings.ReplaceAll(l, "\t", "")) {
			past = append(past, lineShown(l))
		}
	}
	return past
}

// completer is go-prompt's completer, which it calls after every key: it
// also notes the line and whether completions show, for resizeLine.
func (t *Terminal) completer(complete func(before string) []Suggestion) prompt.Completer {
	return func(d prompt.Document) []prompt.Suggest {
		var out []prompt.Suggest
		for _, s := range complete(lineTyped(d.TextBeforeCursor())) {
			out = append(out, prompt.Suggest{Text: s.Text, Description: s.Description})
		}
		t.mu.Lock()
		t.typed, t.before, t.menu = d.Text, d.TextBeforeCursor(), len(out) > 0
		t.mu.Unlock()
		return out
	}
}

// readKeys reads the terminal until Close, queueing keys for go-prompt.
func (t *Terminal) readKeys() {
	defer close(t.readDone)
	buf := make([]byte, 4096)
	var rest []byte
	for {
		n, err := t.console.read(buf)
		var keys [][]byte
		keys, rest = splitKeys(append(rest, buf[:n]...), n == len(buf))
		for _, k := range keys {
			t.key(k)
		}
		switch {
		case errors.Is(err, os.ErrClosed): // Close
			return
		case err != nil:
			// The terminal is gone: end the line being read.
			t.keys.hangUp()
			return
		}
	}
}

// key takes a key the reader has read.
func (t *Terminal) key(k []byte) {
	if len(k) == 1 && (k[0] == ctrlC && t.ctrlC() || k[0] == ctrlZ && t.stopKey()) {
		return
	}
	t.keys.push(k)
}

// ctrlC handles a Ctrl-C as the reader reads it. At the prompt it is a key
// for go-prompt, in turn (false). While a command runs it cancels the
// command and, like a terminal's interrupt, drops the keys typed ahead
// (true).
func (t *Terminal) ctrlC() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reading && !t.keys.lineEntered() {
		// Lines typed ahead of it (a paste still running line by line)
		// are dropped, as a terminal's interrupt drops them, rather than
		// run before it.
		t.keys.dropIfLinesAhead()
		return false
	}
	t.keys.clear()
	if t.interrupt != nil {
		t.interrupt()
	} else {
		t.early = true // the line was read, its command not yet started
	}
	return true
}

// OnInterrupt has cancel called when the user presses Ctrl-C, until the
// returned stop is called. The shell sets it around each command.
func (t *Terminal) OnInterrupt(cancel func()) (stop func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.early {
		t.early = false
		cancel()
	}
	t.interrupt = cancel
	return func() {
		t.mu.Lock()
		t.interrupt = nil
		t.mu.Unlock()
	}
}

// ignoreKey is a key go-prompt reads as Ignore: it does nothing but redraw.
var ignoreKey = []byte{0x1b, 0x5b, 0x45}

// continuedLine: the process was stopped and is continued. The prompt and
// the line being typed, if one is, are drawn again on the cursor's row,
// below what was printed meanwhile, and in the window's width now.
func (t *Terminal) continuedLine() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reading {
		return
	}
	t.continued = true
	if t.needsNewLine(t.typed, t.menu) {
		t.resized = true
	}
	t.keys.redraw()
}

// resizeLine: the window's size changed. go-prompt reads it only as a
// line starts, and drew each key typed after that as a new copy of the
// line, wrapped for the old width. When that matters (needsNewLine), the
// line is ended, not run, and go-prompt reads it on, as typed so far, in
// the new width (ReadLine): one copy of it is left above. The key given to
// go-prompt makes it ask whether to end the line (wrapsAfterResize).
func (t *Terminal) resizeLine() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reading && t.needsNewLine(t.typed, t.menu) {
		t.resized = true
		t.keys.redraw()
	}
}

// wrapsAfterResize: the line must end, as the window's size changed
// (resizeLine), or as it has grown since to need it.
func (t *Terminal) wrapsAfterResize(in string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resized && t.needsNewLine(in, t.menu) {
		t.resized = true
	}
	return t.resized
}

// needsNewLine: the window's width is not the one go-prompt draws the line
// in, and the line wraps in either, or completions drawn for the old width
// show in a narrower one. Else, drawn again, the line would look as it
// does, and is left alone, so that dragging the window's edge leaves no
// trail of prompts.
func (t *Terminal) needsNewLine(in string, menu bool) bool {
	_, now, ok := t.console.size()
	drawn := t.keys.lineWidth()
	if !ok || now == 0 || int(now) == drawn {
		return false
	}
	wraps := runewidth.StringWidth(t.prefix)+runewidth.StringWidth(in) >= min(drawn, int(now))
	return wraps || menu && int(now) < drawn
}

func (t *Terminal) resizing() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.resized
}

// PrintAbove prints lines for w above the line being typed, if one is
// and w shows on the terminal it is drawn on.
func (t *Terminal) PrintAbove(w io.Writer, lines []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reading || w != t.out {
		return false
	}
	t.pending = append(t.pending, lines...)
	t.keys.redraw()
	return true
}

// flush prints the pending lines. In raw mode (inPrompt) it first clears the
// line being typed, from the prompt's row (rows above the cursor's) down;
// go-prompt then redraws it below them. Its redraw starts by moving back as
// many rows, so it finds the cursor as many rows below the lines printed:
// without that it drew the prompt over them, and a line that wrapped hid
// others' changes in follow mode. After a stop (continued) the cursor is
// on a line of its own below whatever the job-control shell printed, and
// the line is left where it was: the redraw goes below.
func (t *Terminal) flush(inPrompt bool, rows int) {
	t.mu.Lock()
	lines, continued := t.pending, t.continued && inPrompt
	t.pending = nil
	if continued && t.resized {
		t.dropCopy = true
	}
	if inPrompt {
		t.continued = false
	}
	t.mu.Unlock()
	if len(lines) == 0 && !continued {
		return
	}
	var b strings.Builder
	if inPrompt && !continued {
		if rows > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", rows)
		}
		b.WriteString("\r\x1b[J")
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	if inPrompt {
		b.WriteString(strings.Repeat("\r\n", rows))
	}
	io.WriteString(t.out, b.String())
}

// belowLine moves the cursor from where go-prompt left it to the start of
// a row of its own below the line being typed, past the rows it wraps
// onto, and clears the completions shown below it, if any. t.mu is held.
func (t *Terminal) belowLine() string {
	cols := t.keys.lineWidth()
	if cols <= 0 {
		return "\r\n\x1b[J"
	}
	p := runewidth.StringWidth(t.prefix)
	end := p + runewidth.StringWidth(t.typed)
	var b strings.Builder
	if down := end/cols - (p+runewidth.StringWidth(t.before))/cols; down > 0 {
		fmt.Fprintf(&b, "\x1b[%dB", down)
	}
	b.WriteString("\r")
	if end%cols != 0 { // else go-prompt has started the row below already
		b.WriteString("\n")
	}
	b.WriteString("\x1b[J")
	return b.String()
}

// rowsAbove is how many rows of the line being typed, the prompt first,
// are above the cursor's: more than none when it wraps. go-prompt counts
// them in the window's width as it was when the line started.
func (t *Terminal) rowsAbove(b *prompt.Buffer) int {
	cols := t.keys.lineWidth()
	if cols <= 0 {
		return 0
	}
	return (runewidth.StringWidth(t.prefix) + runewidth.StringWidth(b.Document().TextBeforeCursor())) / cols
}

// ReadLine implements Input.
func (t *Terminal) ReadLine() (string, error) {
	// Nothing held back from the last line, before lines printed above
	// this one can ask for a redraw, and before a Ctrl-C counts as a key.
	t.keys.startLine()
	t.mu.Lock()
	t.reading, t.early = true, false
	t.typed, t.before, t.menu = "", "", false
	t.mu.Unlock()
	line := t.p.Input()
	for t.takeResized() {
		t.eraseCopy()
		line = t.p.Input() // go-prompt keeps the line's text and cursor
	}
	t.mu.Lock()
	t.reading = false
	t.mu.Unlock()
	line = lineTyped(line)
	t.flush(false, 0) // lines that came as the line was entered
	last, ctrlCs, hungUp := t.keys.end()
	if t.history != nil && line != "" && !hungUp && ctrlCs == 0 {
		_ = t.history.Add(line) // a history that cannot be written is no reason to stop
	}
	switch {
	case hungUp:
		return "", io.EOF
	case ctrlCs >= 2:
		return "", ErrInterrupted
	case line == "" && last == ctrlD:
		return "", io.EOF
	}
	return line, nil
}

// eraseCopy erases the copy of the line go-prompt printed as it ended the
// line for a new width, when the old drawing is gone already: after a
// stop, the line is drawn anew below what the job-control shell printed,
// and once is enough. The copy is plain text, wrapped by the terminal in
// the window's width now.
func (t *Terminal) eraseCopy() {
	t.mu.Lock()
	drop, text := t.dropCopy, t.ended
	t.dropCopy = false
	t.mu.Unlock()
	_, cols, ok := t.console.size()
	if !drop || !ok || cols == 0 {
		return
	}
	w := runewidth.StringWidth(t.prefix) + runewidth.StringWidth(text)
	rows := (w + int(cols) - 1) / int(cols)
	fmt.Fprintf(t.out, "\x1b[%dA\r\x1b[J", max(rows, 1))
}

func (t *Terminal) takeResized() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.resized
	t.resized = false
	return r
}

// console is the terminal itself, in raw mode from openConsole on: go-prompt's
// raw mode, which leaves output processing on, so "\n" still starts a line.
type console interface {
	// read blocks until keys come; after stop it fails with os.ErrClosed.
	read(buf []byte) (int, error)
	// size is the window's size; ok is false if it is unknown.
	size() (rows, cols uint16, ok bool)
	// stop ends reading, a pending read included.
	stop()
}

// Release is Close: the shell reads no more lines.
func (t *Terminal) Release() { t.Close() }

// Close restores the terminal's settings and stops reading it. It is safe
// to call more than once.
func (t *Terminal) Close() error {
	var err error
	t.closeOnce.Do(func() {
		t.mu.Lock()
		if t.reading {
			// A signal ended the shell mid-line: clear the completions
			// that go-prompt may show below it.
			io.WriteString(t.out, "\x1b[J")
		}
		t.mu.Unlock()
		if t.stopWatch != nil {
			t.stopWatch()
		}
		t.console.stop()
		<-t.readDone
		err = term.Restore(t.stdin, t.saved)
	})
	return err
}

const (
	ctrlC = 0x03
	ctrlD = 0x04
)

// errNoKey tells go-prompt, which polls, that no key is ready.
var errNoKey = errors.New("no key typed")

// keyQueue is the go-prompt ConsoleParser: it hands go-prompt the keys the
// reader has queued, one per Read. After a key that may end the line (Enter,
// Ctrl-D, Ctrl-C) it holds the rest back until go-prompt has handled that
// one: keys go-prompt reads after the line ends are lost with it. It also
// remembers the last key and how many Ctrl-Cs came in a row, which
// go-prompt's Input does not report. go-prompt reads keys on one goroutine
// and handles them on another, hence the lock.
type keyQueue struct {
	console console // for the window size

	mu         sync.Mutex
	keys       [][]byte
	wantRedraw bool // hand out ignoreKey next
	held       byte // the key handed out that may end the line; 0 if none
	last       byte // the last key handed out, if one byte
	ctrlCs     int
	gone       bool // the terminal hung up
	cols       int  // the window's width when the line started
}

// Setup and TearDown do nothing: the Terminal keeps the terminal raw.
func (q *keyQueue) Setup() error    { return nil }
func (q *keyQueue) TearDown() error { return nil }

// GetWinSize is the terminal's width (go-prompt's panics if the ioctl
// fails). Its height is given as the most there can be: go-prompt uses it
// only to refuse a line taller than the window, with the completions'
// rows, and then erases the screen and says "Your console window is too
// small..." in the line's place: a pasted certificate would wipe what the
// window shows. Drawn anyway, such a line scrolls as any long output does.
func (q *keyQueue) GetWinSize() *prompt.WinSize {
	_, cols, ok := q.console.size()
	if !ok || cols == 0 {
		cols = 80
	}
	q.mu.Lock()
	q.cols = int(cols)
	q.mu.Unlock()
	return &prompt.WinSize{Row: math.MaxUint16, Col: cols}
}

// lineWidth is the window's width go-prompt draws the line in: it asks
// for it as a line starts (GetWinSize), and only then.
func (q *keyQueue) lineWidth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cols
}

func (q *keyQueue) Read() ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.held != 0:
		return nil, errNoKey
	case q.wantRedraw:
		q.wantRedraw = false
		return ignoreKey, nil
	case len(q.keys) == 0:
		return nil, errNoKey
	}
	k := q.keys[0]
	q.keys = q.keys[1:]
	// Text read after it goes with it: go-prompt draws the whole line
	// again for each key it takes, and a paste comes in reads of 4 KiB,
	// so a pasted line of 2 MiB would take it a minute, writing the line
	// to the terminal 500 times.
	for isText(k) && len(q.keys) > 0 && isText(q.keys[0]) {
		k = append(k[:len(k):len(k)], q.keys[0]...)
		q.keys = q.keys[1:]
	}
	q.last = 0
	if len(k) == 1 {
		q.last = k[0]
	}
	if q.last == ctrlC {
		q.ctrlCs++
	} else {
		q.ctrlCs = 0
	}
	switch q.last {
	case '\r', '\n', ctrlD, ctrlC:
		q.held = q.last
	}
	return k, nil
}

// isText: k is a run of text, not a control key or an escape sequence.
func isText(k []byte) bool { return k[0] >= 0x20 && k[0] != 0x7f }

func (q *keyQueue) push(k []byte) {
	q.mu.Lock()
	q.keys = append(q.keys, k)
	q.mu.Unlock()
}

// clear drops the keys not yet handed out.
func (q *keyQueue) clear() {
	q.mu.Lock()
	q.keys = nil
	q.mu.Unlock()
}

func (q *keyQueue) redraw() {
	q.mu.Lock()
	q.wantRedraw = true
	q.mu.Unlock()
}

// release: the held key did not end the line.
func (q *keyQueue) release() {
	q.mu.Lock()
	if q.held == ctrlD || q.held == ctrlC {
		q.held = 0
	}
	q.mu.Unlock()
}

// dropIfLinesAhead drops the keys not yet handed out if they end a line.
func (q *keyQueue) dropIfLinesAhead() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range q.keys {
		if len(k) == 1 && (k[0] == '\r' || k[0] == '\n') {
			q.keys = nil
			return
		}
	}
}

// lineEntered: Enter was handed out, so the line is as good as read.
func (q *keyQueue) lineEntered() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held == '\r' || q.held == '\n'
}

// firstCtrlC: the key handed out last is a Ctrl-C, the first in a row.
func (q *keyQueue) firstCtrlC() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.last == ctrlC && q.ctrlCs == 1
}

func (q *keyQueue) ctrlCsInARow() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ctrlCs
}

// startLine: go-prompt reads a new line, and nothing is held back.
func (q *keyQueue) startLine() {
	q.mu.Lock()
	q.held, q.wantRedraw = 0, false
	q.mu.Unlock()
}

// end reports how the line ended.
func (q *keyQueue) end() (last byte, ctrlCs int, hungUp bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.last, q.ctrlCs, q.gone && len(q.keys) == 0
}

// hangUp ends input: after the keys queued, Ctrl-C clears the line and
// Ctrl-D on the empty line makes go-prompt return.
func (q *keyQueue) hangUp() {
	q.mu.Lock()
	q.gone = true
	q.keys = append(q.keys, []byte{ctrlC}, []byte{ctrlD})
	q.mu.Unlock()
}
