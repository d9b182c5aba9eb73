package repl

import (
	"strings"
	"unicode"
)

// Suggestion is one completion: the text to put in place of the word being
// typed, and a description.
type Suggestion struct {
	Text, Description string
}

// Complete returns completions for the text before the cursor: command
// names for the first word (and HELP's parameter), then keys of the local
// copy for a command's first parameter.
func (sh *Shell) Complete(before string) []Suggestion {
	before = strings.TrimLeftFunc(before, unicode.IsSpace)
	if before == "" {
		return nil // a menu on every empty prompt is noise; a letter opens it
	}
	i := strings.IndexFunc(before, unicode.IsSpace)
	if i < 0 {
		return commandsStarting(before)
	}
	c := lookup(before[:i])
	rest := strings.TrimLeftFunc(before[i:], unicode.IsSpace)
	if c == nil || len(c.params) == 0 || strings.Contains(rest, ",") || strings.HasPrefix(rest, `"`) {
		return nil
	}
	var out []Suggestion
	switch p := c.params[0]; p.kind {
	case choiceParam:
		for _, w := range p.choices {
			if hasPrefixFold(w, rest) {
				out = append(out, Suggestion{w, ""})
			}
		}
	case commandParam:
		out = commandsStarting(rest)
	case leaseParam:
		for name, l := range sh.cfg.State().Leases() {
			if hasPrefixFold(name, rest) && !strings.ContainsAny(name, " ,\"") && printable(name) {
				out = append(out, Suggestion{name, "held by " + shown(l.Holder)})
			}
		}
	case keyParam, prefixParam:
		for k, p := range sh.cfg.State().WithPrefix(rest) {
			if strings.ContainsAny(k, " ,\"") || !printable(k) {
				continue // completion replaces one word; such keys are typed quoted
			}
			text, size := previewShown(p.Value) // the menu shows it
			out = append(out, Suggestion{k, text + size})
			if len(out) == 50 {
				break
			}
		}
	}
	return out
}

// commandsStarting are the commands whose names start with word, ignoring
// case, with their help.
func commandsStarting(word string) []Suggestion {
	var out []Suggestion
	for _, c := range commands {
		if hasPrefixFold(c.name, word) {
			out = append(out, Suggestion{c.name, c.help})
		}
	}
	return out
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
