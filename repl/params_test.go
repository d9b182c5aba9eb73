package repl

import (
	"slices"
	"testing"
)

// The table's rows are well formed: optional parameters come last, and each
// kind has what its checks and messages need.
func TestCommandTableIsWellFormed(t *testing.T) {
	for _, c := range commands {
		seenOptional := false
		for i, p := range c.params {
			if seenOptional && !p.optional {
				t.Errorf("%s: parameter %d is required after an optional one", c.name, i+1)
			}
			seenOptional = seenOptional || p.optional
			switch {
			case p.kind == choiceParam && len(p.choices) == 0:
				t.Errorf("%s: parameter %d has no choices", c.name, i+1)
			case p.kind == countParam && p.noun == "":
				t.Errorf("%s: parameter %d has no noun for its warning", c.name, i+1)
			case p.kind != choiceParam && p.name == "":
				t.Errorf("%s: parameter %d has no name", c.name, i+1)
			}
		}
		if c.run == nil {
			t.Errorf("%s: nothing to run", c.name)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	cases := []struct {
		line, refusal string // "" when the line may run
	}{
		{"GET_ALL", ""},
		{"GET_ALL ,", ""}, // an empty prefix: every key
		{"LOG 3", ""},
		{"LOG 0", "LOG takes a number of entries, 1 or more: '0'"},
		{"LOG 1, 2", "Expecting parameters: [number of entries] -- got 2: '1', '2'"},
		{"follow on", ""},
		{"TRACE yes", "Expecting parameters: ON or OFF, not 'yes'"},
		{"REMOVE , v", "Expecting parameters: key [, currentValue] -- the key is empty"},
		{`PUT k, ""`, ""}, // an empty value is a value
		{"PUT k, a, b", "Expecting parameters: key , value -- got 3: 'k', 'a', 'b' (quote a parameter that holds a comma)"},
		{"HISTORY", "Expecting parameters: key"},
		{"QUIT now", "QUIT takes no parameters -- got 1: 'now'"},
	}
	for _, c := range cases {
		line, err := Parse(c.line)
		if err != nil {
			t.Fatal(err)
		}
		r, bad := lookup(line.Word).checkArgs(line.Args)
		if bad != (c.refusal != "") || bad && r.err != c.refusal {
			t.Errorf("%s: refused %v %q, want %q", c.line, bad, r.err, c.refusal)
		}
	}
}

// A word that names no command gets a guess when it is a slip from one
// command's name, or a command with its parameters run on without a space,
// and the plain answer otherwise: no guess between two commands, and none
// for a word nothing like a name.
func TestUnknownCommandGuesses(t *testing.T) {
	for word, want := range map[string]string{
		"PTU":        "Unknown command: 'PTU' (did you mean PUT? HELP lists the commands)",
		"putt":       "Unknown command: 'putt' (did you mean PUT? HELP lists the commands)",
		"GETALL":     "Unknown command: 'GETALL' (did you mean GET_ALL? HELP lists the commands)",
		"REPALCE":    "Unknown command: 'REPALCE' (did you mean REPLACE? HELP lists the commands)",
		"EXTI":       "Unknown command: 'EXTI' (did you mean QUIT? HELP lists the commands)",
		"PUT,a,b":    "Unknown command: 'PUT,a,b' (put a space after PUT; HELP lists the commands)",
		"get,k":      "Unknown command: 'get,k' (put a space after get; HELP lists the commands)",
		"FOO":        "Unknown command: 'FOO' (HELP lists the commands)",
		"NOPE":       "Unknown command: 'NOPE' (HELP lists the commands)",
		"BOGUS":      "Unknown command: 'BOGUS' (HELP lists the commands)",
		"FOO,a":      "Unknown command: 'FOO,a' (HELP lists the commands)",
		"\x1bPUT":    `Unknown command: '"\x1bPUT"' (did you mean PUT? HELP lists the commands)`,
		"\x1bPUT,a":  `Unknown command: '"\x1bPUT,a"' (HELP lists the commands)`,
		"PUT\x1b,a":  `Unknown command: '"PUT\x1b,a"' (HELP lists the commands)`,
		"FOLLOWON":   "Unknown command: 'FOLLOWON' (did you mean FOLLOW? HELP lists the commands)",
		"REFRESHLEA": "Unknown command: 'REFRESHLEA' (HELP lists the commands)",
	} {
		if got := unknownCommand(word).err; got != want {
			t.Errorf("%q: %s\nwant %s", word, got, want)
		}
	}
}

// HELP's parameter completes to the commands, as the first word does: a
// newcomer who types HELP PU and Tab gets PUT, PUT_IF_ABSENT and
// PUT_WITH_LEASE, not the keys of the copy.
func TestHelpCompletesCommands(t *testing.T) {
	sh, _ := newTestShell(t)
	var got []string
	for _, s := range sh.Complete("help pu") {
		got = append(got, s.Text)
	}
	if want := []string{"PUT", "PUT_IF_ABSENT", "PUT_WITH_LEASE"}; !slices.Equal(got, want) {
		t.Errorf("HELP pu completes to %q, want %q", got, want)
	}
	if got := sh.Complete("HELP PUT, x"); got != nil {
		t.Errorf("after a comma: %q", got)
	}
}
