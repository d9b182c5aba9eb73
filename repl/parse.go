package repl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line is one parsed input line.
type Line struct {
	// Word is the command word as typed; commands match it ignoring case.
	Word string
	// Args are the comma-separated pieces after the command word, trimmed.
	Args []string
}

// Parse splits a line the way the original SharedConfigCLI does: the command
// word ends at the first white space; the rest of the line is split on commas
// and each piece is trimmed; empty pieces at the end are dropped (as Java's
// String.split drops them). A blank line parses to an empty Word.
//
// One addition: a piece that starts with a double quote is a Go string
// literal ("a, b", "say \"hi\"", "tab\there"), so keys and values can hold
// commas, quotes, and leading or trailing spaces. A quote anywhere else is an
// ordinary character, so every line the original accepts means the same.
func Parse(line string) (Line, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Line{}, nil
	}
	word, rest := line, ""
	if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
		word, rest = line[:i], line[i:]
	}
	if strings.TrimSpace(rest) == "" {
		return Line{Word: word}, nil
	}
	// As in the original, the rest keeps the white space after the command
	// word, and a trailing piece is dropped only if it is empty before
	// trimming: "GET ," asks for the key "", "GET k,," for "k".
	var args []string
	var rawEmpty []bool
	for {
		piece, raw, remainder, more, err := nextPiece(rest)
		if err != nil {
			return Line{}, fmt.Errorf("parameter %d: %w", len(args)+1, err)
		}
		args = append(args, piece)
		rawEmpty = append(rawEmpty, raw == "")
		if !more {
			break
		}
		rest = remainder
	}
	for len(args) > 0 && rawEmpty[len(args)-1] {
		args, rawEmpty = args[:len(args)-1], rawEmpty[:len(rawEmpty)-1]
	}
	return Line{Word: word, Args: args}, nil
}

// nextPiece takes one piece off s: the text up to the next comma, trimmed,
// or a quoted string. raw is the piece as it stood in s; more reports
// whether a comma followed.
func nextPiece(s string) (piece, raw, rest string, more bool, err error) {
	trimmed := strings.TrimLeftFunc(s, unicode.IsSpace)
	if !strings.HasPrefix(trimmed, `"`) {
		raw, rest, more = strings.Cut(s, ",")
		return strings.TrimSpace(raw), raw, rest, more, nil
	}
	end := closingQuote(trimmed)
	if end < 0 {
		return "", "", "", false, errors.New(`a quoted piece has no closing '"'`)
	}
	piece, err = strconv.Unquote(trimmed[:end+1])
	if err != nil {
		return "", "", "", false, fmt.Errorf("bad quoted piece %s: use Go string syntax, e.g. \"a, b\" or \"say \\\"hi\\\"\"", trimmed[:end+1])
	}
	raw = trimmed[:end+1]
	after := strings.TrimLeftFunc(trimmed[end+1:], unicode.IsSpace)
	if after == "" {
		return piece, raw, "", false, nil
	}
	if after[0] != ',' {
		return "", "", "", false, fmt.Errorf("unexpected %q after the closing quote (separate parameters with commas)", after)
	}
	return piece, raw, after[1:], true, nil
}

// closingQuote returns the index of the quote that ends the string literal
// starting at s[0], or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// Quote returns s as a user would type it as a parameter: as is when that
// reads back the same and is safe to print, else as a quoted string.
func Quote(s string) string {
	if s != "" && s == strings.TrimSpace(s) && !strings.ContainsAny(s, ",\"") && printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// shown is s as text output shows a key, a value or a name: as is when every
// character is printable, else as a quoted string in the syntax the shell
// reads ("\x1b]0;x\a", "a\nb", "\u202e"). Nothing stored can then move the
// cursor, retitle or write the clipboard of a terminal, or split a line or a
// table row. Its result is printable, so shown(shown(s)) == shown(s) and
// text built from shown pieces passes through it unchanged.
func shown(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// printable: s is UTF-8 made only of characters strconv.Quote leaves as they
// are; no control characters (C0, C1, DEL), no format characters such as the
// bidi overrides, no line or paragraph separators.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}
