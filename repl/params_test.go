package repl

import "testing"

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
