package repl

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
)

// kind is what a parameter holds, which decides how it is checked and
// completed.
type kind int

const (
	keyParam     kind = iota // a key: never empty; completion offers keys
	prefixParam              // the start of keys, maybe empty; completion offers keys
	valueParam               // any text
	countParam               // a whole number, 1 or more, that fits a uint64
	choiceParam              // one of choices, ignoring case
	leaseParam               // a lease's name: never empty; completion offers leases
	ttlParam                 // a lease's ttl: a duration or a number of seconds
	commandParam             // a command's name (HELP's): completion offers commands
)

// param is one parameter of a command, stated once: HELP's syntax, the
// usage warning, the arity, the checks and completion all follow from it.
type param struct {
	name     string
	optional bool // only last parameters are optional
	kind     kind
	choices  []string // choiceParam: the words it takes
	// noun names the parameter in the usage warning, if not its name.
	noun string
}

// holdsText: the parameter takes text, which may hold a comma if quoted.
func (p param) holdsText() bool {
	return p.kind == keyParam || p.kind == prefixParam || p.kind == valueParam || p.kind == leaseParam || p.kind == commandParam
}

// syntax is the command as HELP shows it: "REMOVE {key} [ , {currentValue}]".
func (c *command) syntax() string {
	var b strings.Builder
	b.WriteString(c.name)
	for i, p := range c.params {
		sep := " , "
		if i == 0 {
			sep = " "
		}
		shape := "{" + p.name + "}"
		if p.kind == choiceParam {
			shape = strings.Join(p.choices, "|")
		}
		if !p.optional {
			b.WriteString(sep + shape)
		} else if i == 0 {
			b.WriteString(" [" + shape + "]")
		} else {
			b.WriteString(" [" + sep + shape + "]")
		}
	}
	return b.String()
}

// usage is the warning for too few or too many parameters:
// "Expecting parameters: key [, currentValue]".
func (c *command) usage() string {
	if c.usageText != "" {
		return c.usageText
	}
	if len(c.params) == 0 {
		return c.name + " takes no parameters"
	}
	var b strings.Builder
	b.WriteString("Expecting parameters: ")
	for i, p := range c.params {
		noun := p.noun
		if noun == "" {
			noun = p.name
		}
		if p.kind == choiceParam {
			noun = strings.Join(p.choices, " or ")
		}
		switch {
		case p.optional && i == 0:
			b.WriteString("[" + noun + "]")
		case p.optional:
			b.WriteString(" [, " + noun + "]")
		case i == 0:
			b.WriteString(noun)
		default:
			b.WriteString(" , " + noun)
		}
	}
	return b.String()
}

// required is how many parameters the command cannot do without.
func (c *command) required() int {
	n := 0
	for _, p := range c.params {
		if !p.optional {
			n++
		}
	}
	return n
}

// checkArgs refuses parameters the command cannot take: too few, too many,
// an empty key (the shell never writes one, so none can be read), a count
// that is not one, a word that is not a choice.
func (c *command) checkArgs(args []string) (reply, bool) {
	n := len(args)
	switch {
	case n < c.required():
		return refuse("%s", c.usage()), true
	case n > len(c.params):
		shownArgs := make([]string, n)
		for i, a := range args {
			shownArgs[i] = shown(a)
		}
		hint := ""
		for _, p := range c.params {
			if p.holdsText() {
				hint = " (quote a parameter that holds a comma)"
			}
		}
		return refuse("%s -- got %d: '%s'%s", c.usage(), n, strings.Join(shownArgs, "', '"), hint), true
	}
	for i, a := range args {
		switch p := c.params[i]; p.kind {
		case keyParam:
			if a == "" {
				return refuse("%s -- the key is empty", c.usage()), true
			}
		case leaseParam:
			if a == "" {
				return refuse("%s -- the lease name is empty", c.usage()), true
			}
		case ttlParam:
			if _, err := lease.ParseTTL(a); err != nil {
				return refuse("%s takes a ttl such as 10s or a number of seconds, from 1s to 24h: '%s'", c.name, a), true
			}
		case countParam:
			if v, err := strconv.ParseUint(a, 10, 64); errors.Is(err, strconv.ErrRange) {
				return refuse("%s takes a %s, from 1 to %d: '%s'", c.name, p.noun, uint64(math.MaxUint64), a), true
			} else if err != nil || v < 1 {
				return refuse("%s takes a %s, 1 or more: '%s'", c.name, p.noun, a), true
			}
		case choiceParam:
			if choice(p, a) == "" {
				return refuse("%s, not '%s'", c.usage(), a), true
			}
		}
	}
	return reply{}, false
}

// choice is the choice of p that word names, ignoring case, or "".
func choice(p param, word string) string {
	for _, c := range p.choices {
		if strings.EqualFold(c, word) {
			return c
		}
	}
	return ""
}
