package repl

import (
	"bytes"
	"strings"
	"unicode/utf8"

	prompt "github.com/c-bata/go-prompt"
)

// Bracketed-paste markers: terminals wrap a paste in them when asked to.
// go-prompt does not ask, but a terminal left in that mode sends them.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// splitKeys splits what one read of the terminal returned into keys, as
// go-prompt takes them: an escape sequence, a control character, or a run
// of text (which go-prompt inserts as if typed character by character).
// "\r\n" is one Enter. Bracketed-paste markers are dropped, and so are
// escape sequences go-prompt does not know. A Tab that is not the whole
// read is part of a paste and so text, as in a script: as the Tab key it
// would complete a key nobody named ("REMOVE \t" removed one). A person's
// Tab comes alone, in a read of its own. Text is as lineText makes it.
// With more (the read filled its buffer, so the rest may follow), an
// escape sequence or UTF-8 character cut off at the end is returned as
// rest, to be put in front of the next read.
func splitKeys(b []byte, more bool) (keys [][]byte, rest []byte) {
	pasted := len(b) > 1
	for len(b) > 0 {
		n, complete := keyLen(b, pasted)
		if !complete && more {
			return keys, b
		}
		k := b[:n]
		b = b[n:]
		switch {
		case bytes.Equal(k, pasteStart), bytes.Equal(k, pasteEnd):
			continue
		case k[0] == '\r' && len(b) > 0 && b[0] == '\n':
			b = b[1:]
		case k[0] == 0x1b && len(k) > 1 && prompt.GetKey(k) == prompt.NotDefined:
			// A sequence go-prompt has no key for (Shift-F5, Alt-Up, a
			// focus report): it would insert it as text, ESC and all,
			// into the line, drawn as "?[15;2~" and run as typed. It is
			// a key that does nothing, as in other line editors.
			continue
		case k[0] >= 0x20 && k[0] != 0x7f || pasted && k[0] == '\t':
			if k = lineText(k); len(k) == 0 {
				continue
			}
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// tabShown stands for a pasted Tab in the line go-prompt edits, where it is
// text: go-prompt counts a Tab as no column wide, the terminal as up to
// eight, so the line would be drawn again in the wrong place at every key.
// ReadLine gives the Tab back (lineTyped).
const tabShown = "\u2409" // ␉

// lineText is a run of text as go-prompt is to insert it: Tabs are shown
// as tabShown, and C1 controls (U+0080 to U+009F) are dropped, as C0
// controls are keys: echoed, one could move the cursor or clear the
// screen of a terminal that obeys them (xterm does).
func lineText(k []byte) []byte {
	k = bytes.ReplaceAll(k, []byte{'\t'}, []byte(tabShown))
	out := k[:0:0]
	for len(k) > 0 {
		// Bytes that are not UTF-8 stay as they are, for the command
		// to refuse as such.
		r, n := utf8.DecodeRune(k)
		if r < 0x80 || r > 0x9f {
			out = append(out, k[:n]...)
		}
		k = k[n:]
	}
	return out
}

// lineTyped is the line go-prompt returns as typed: with its Tabs.
func lineTyped(s string) string { return strings.ReplaceAll(s, tabShown, "\t") }

// lineShown is a line of the history as go-prompt is to show it.
func lineShown(s string) string { return strings.ReplaceAll(s, "\t", tabShown) }

// keyLen is the length of the key b starts with, and whether it is whole.
// In a paste a Tab is text.
func keyLen(b []byte, pasted bool) (n int, complete bool) {
	isKey := func(c byte) bool { return (c < 0x20 || c == 0x7f) && !(pasted && c == '\t') }
	switch c := b[0]; {
	case c == 0x1b:
		return escapeLen(b)
	case isKey(c):
		return 1, true
	}
	for n < len(b) {
		if isKey(b[n]) {
			return n, true
		}
		if !utf8.FullRune(b[n:]) {
			return len(b), false
		}
		_, size := utf8.DecodeRune(b[n:])
		n += size
	}
	return n, true
}

// escapeLen is the length of the escape sequence b starts with: one that
// go-prompt knows (the longest), else a CSI ("ESC [" parameters, a final
// byte) or SS3 ("ESC O" and one byte) sequence, else ESC alone.
func escapeLen(b []byte) (n int, complete bool) {
	for _, s := range prompt.ASCIISequences {
		if len(s.ASCIICode) > n && bytes.HasPrefix(b, s.ASCIICode) {
			n = len(s.ASCIICode)
		}
	}
	switch {
	case n > 1:
		return n, true
	case len(b) == 1:
		return 1, false // the Escape key, or the start of a sequence
	case b[1] == 'O':
		if len(b) < 3 {
			return len(b), false
		}
		return 3, true
	case b[1] != '[':
		return 1, true
	}
	for n = 2; n < len(b); n++ {
		switch c := b[n]; {
		case c >= 0x40 && c <= 0x7e:
			return n + 1, true
		case c < 0x20 || c > 0x7e: // not a parameter, intermediate or final byte
			return n, true
		}
	}
	return len(b), false
}
