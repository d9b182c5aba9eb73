package repl

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/internal/asciitable"
)

// reply is what a command answers, before it is rendered as text or JSON.
type reply struct {
	outcome outcome
	lines   []string // text: answer lines, with their "**** " or "!!!! " prefix
	table   *table   // text: a table after the lines
	result  fields   // JSON: the result's fields
	err     string   // a failure, for JSON; lines hold its text form
	// stopped: the failure is a signal's that stopped the run (SIGINT,
	// SIGTERM), a clean stop: shown as a failure, not counted as one.
	stopped bool
}

type fields = map[string]any

type table struct {
	header []string
	rows   [][]string
}

func say(format string, args ...any) string  { return "**** " + safef(format, args) }
func warn(format string, args ...any) string { return "!!!! " + safef(format, args) }

// safef formats a line of text output. Every string (and error) argument is
// data, from a user, a stream or a server, and goes in as shown shows it;
// the format is ours. With renderTable's cells this is the one place text
// output escapes what it prints.
func safef(format string, args []any) string {
	safe := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			safe[i] = shown(a)
		case error:
			safe[i] = shown(a.Error())
		default:
			safe[i] = a
		}
	}
	return fmt.Sprintf(format, safe...)
}

// answer is a reply of one line.
func answer(line string, result fields) reply {
	return reply{lines: []string{line}, result: result}
}

// refuse is a reply for a line that cannot run; its arguments are escaped
// as say's are.
func refuse(format string, args ...any) reply {
	msg := safef(format, args)
	return reply{outcome: failed, lines: []string{"!!!! " + msg}, err: msg}
}

func renderTable(w io.Writer, t *table) error {
	rows := make([][]string, len(t.rows))
	for i, row := range t.rows {
		rows[i] = make([]string, len(row))
		for j, cell := range row {
			rows[i][j] = shown(cell) // a newline would split the row
		}
	}
	return asciitable.Render(w, t.header, rows)
}

// jsonReply is the one JSON object printed per command with -o json.
type jsonReply struct {
	Command  string      `json:"command"`
	OK       bool        `json:"ok"`
	Result   fields      `json:"result,omitempty"`
	Error    string      `json:"error,omitempty"`
	Line     int         `json:"line,omitempty"`     // a script's failed line
	Argument int         `json:"argument,omitempty"` // exec's failed argument
	Revision *uint64     `json:"revision,omitempty"` // nil: the copy stands nowhere
	Attempts []jsonTrace `json:"attempts,omitempty"`
}

type jsonTrace struct {
	Attempt  int    `json:"attempt"`
	Base     uint64 `json:"base_revision"`
	Updates  int    `json:"updates"`
	Conflict bool   `json:"conflict,omitempty"`
	StreamAt uint64 `json:"stream_revision,omitempty"`
	CaughtUp uint64 `json:"caught_up_to,omitempty"`
	// Stopped: no try came after this conflict's (see statesync.Attempt).
	Stopped   bool   `json:"stopped,omitempty"`
	Committed uint64 `json:"committed_at,omitempty"`
	// HeldBackMS: how long the try waited for older writers' turns.
	HeldBackMS float64 `json:"held_back_ms,omitempty"`
	// Unconditional: appended whatever the stream's revision (a lease
	// refresh), so it could not conflict; base_revision is 0.
	Unconditional bool `json:"unconditional,omitempty"`
	// Carried: handed to the writer under way, whose entry at
	// committed_at carries it (docs/consistency.md, Combining).
	Carried bool `json:"carried,omitempty"`
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fields{"ok": false, "error": err.Error()})
	}
	fmt.Fprintf(w, "%s\n", escapeNonPrintable(b))
}

// SafeJSON is JSON text b with every non-ASCII character that is not
// printable written as a \u escape, as every JSON answer of the shell is:
// for the JSON other commands print.
func SafeJSON(b []byte) []byte { return escapeNonPrintable(b) }

// escapeNonPrintable writes every non-ASCII character that is not printable
// (C1 controls, bidi overrides and other format characters) as a JSON \u
// escape. encoding/json escapes only the ASCII controls and U+2028/U+2029,
// and a terminal showing the JSON would obey the rest. Outside strings JSON
// is ASCII, so this changes only strings, and not what they decode to.
func escapeNonPrintable(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r < utf8.RuneSelf && r != 0x7f || strconv.IsPrint(r) && size > 1 {
			out = append(out, b[i:i+size]...)
		} else if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// Shown is s as text output shows a key, a value, a name or anything else
// from a user, a stream or a server: as is when every character is
// printable, else as a quoted string (see shown).
func Shown(s string) string { return shown(s) }

// PrintTable prints a table as the shell prints its own: every cell as
// Shown shows it, and a warning line if the table cannot be drawn.
func PrintTable(w io.Writer, header []string, rows [][]string) {
	if err := renderTable(w, &table{header: header, rows: rows}); err != nil {
		fmt.Fprintln(w, warn("Error: %v", err))
	}
}

// WriteJSON prints v as one line of JSON, escaped as the shell's -o json
// output is (see escapeNonPrintable).
func WriteJSON(w io.Writer, v any) { writeJSON(w, v) }

func yesNo(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
