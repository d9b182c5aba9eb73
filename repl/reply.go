package repl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sharedconfig/sharedconfig/internal/asciitable"
)

// reply is what a command answers, before it is rendered as text or JSON.
type reply struct {
	outcome outcome
	lines   []string // text: answer lines, with their "**** " or "!!!! " prefix
	table   *table   // text: a table after the lines
	result  fields   // JSON: the result's fields
	err     string   // a failure, for JSON; lines hold its text form
}

type fields = map[string]any

type table struct {
	header []string
	rows   [][]string
}

func say(format string, args ...any) string  { return "**** " + fmt.Sprintf(format, args...) }
func warn(format string, args ...any) string { return "!!!! " + fmt.Sprintf(format, args...) }

// answer is a reply of one line.
func answer(line string, result fields) reply {
	return reply{lines: []string{line}, result: result}
}

// refuse is a reply for a line that cannot run.
func refuse(msg string) reply {
	return reply{outcome: failed, lines: []string{warn("%s", msg)}, err: msg}
}

func renderTable(w io.Writer, t *table) error {
	return asciitable.Render(w, t.header, t.rows)
}

// jsonReply is the one JSON object printed per command with -o json.
type jsonReply struct {
	Command  string      `json:"command"`
	OK       bool        `json:"ok"`
	Result   fields      `json:"result,omitempty"`
	Error    string      `json:"error,omitempty"`
	Revision uint64      `json:"revision"`
	Attempts []jsonTrace `json:"attempts,omitempty"`
}

type jsonTrace struct {
	Attempt   int    `json:"attempt"`
	Base      uint64 `json:"base_revision"`
	Updates   int    `json:"updates"`
	Conflict  bool   `json:"conflict,omitempty"`
	StreamAt  uint64 `json:"stream_revision,omitempty"`
	CaughtUp  uint64 `json:"caught_up_to,omitempty"`
	Committed uint64 `json:"committed_at,omitempty"`
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fields{"ok": false, "error": err.Error()})
	}
	fmt.Fprintf(w, "%s\n", b)
}

func yesNo(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func onOff(arg string) (bool, bool) {
	switch strings.ToUpper(arg) {
	case "ON":
		return true, true
	case "OFF":
		return false, true
	}
	return false, false
}
