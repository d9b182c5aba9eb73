package repl

import (
	"context"
	"fmt"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// command is one row of the command table. The same rows drive dispatch,
// the argument checks, HELP and completion.
type command struct {
	name    string
	aliases []string
	// syntax and help make the command's HELP line: "syntax - help".
	syntax, help string
	// min and max bound the parameters; usage is the warning for too few
	// or too many. max -1: any number, ignored.
	min, max int
	usage    string
	// keyArg: the first parameter is a key, so completion offers keys.
	keyArg bool
	run    func(ctx context.Context, sh *Shell, args []string) outcome
}

// outcome is how a command ended, for the exit status of a script.
type outcome int

const (
	ok      outcome = iota // done, whatever its answer
	failed                 // an error, or a line that could not run
	quitNow                // QUIT
)

// commands is the table. HELP lists the rows in this order; the texts are
// the original SharedConfigCLI's.
var commands []*command

func init() {
	commands = []*command{
		{name: "GET_ALL", syntax: "GET_ALL", help: "prints out all of the properties in the Shared Config.",
			run: runGetAll},
		{name: "GET", syntax: "GET {key}", help: "print out the configuration property for the given key.",
			min: 1, max: 1, usage: "Please enter a key to retrieve", keyArg: true, run: runGet},
		{name: "PUT", syntax: "PUT {key} , {value}", help: "update the Shared Config with the given key/value pair.  Print out previous value (if it existed).",
			min: 2, max: 2, usage: "Expecting parameters: key , value", keyArg: true, run: runPut},
		{name: "PUT_IF_ABSENT", aliases: []string{"PUT_IF_ABCENT"}, syntax: "PUT_IF_ABSENT {key} , {value}", help: "update the Shared Config with the given key/value pair, only if the property is not already defined.",
			min: 2, max: 2, usage: "Expecting parameters: key , value", keyArg: true, run: runPutIfAbsent},
		{name: "REMOVE", syntax: "REMOVE {key} [ , {currentValue}]", help: "remove the given property from the Shared Config.  If {currentValue} is given, remove only if the property's current value matches {currentValue}.",
			min: 1, max: 2, usage: "Expecting parameters: key [, currentValue]", keyArg: true, run: runRemove},
		{name: "REPLACE", syntax: "REPLACE {key} , {newValue} [ , {currentValue}]", help: "update the value of the property.  If {currentValue} is given, update only if the property's current value matches {currentValue}.",
			min: 2, max: 3, usage: "Expecting parameters: key , newValue [, currentValue]", keyArg: true, run: runReplace},
		{name: "CLEAR", syntax: "CLEAR", help: "remove all the keys from the Shared Config.", run: runClear},
		{name: "REFRESH", syntax: "REFRESH", help: "force an update from the Synchronized State.", run: runRefresh},
		{name: "HELP", syntax: "HELP", help: "print out a list of commands.", run: runHelp},
		// QUIT ignores anything after it, as the original does.
		{name: "QUIT", aliases: []string{"EXIT"}, syntax: "QUIT", help: "terminate the program.", max: -1, run: runQuit},
	}
}

// lookup finds the command for a word, ignoring case.
func lookup(word string) *command {
	for _, c := range commands {
		if strings.EqualFold(c.name, word) {
			return c
		}
		for _, a := range c.aliases {
			if strings.EqualFold(a, word) {
				return c
			}
		}
	}
	return nil
}

// helpText is HELP's output, built from the table.
func helpText() string {
	var b strings.Builder
	b.WriteString("Enter one of the following commands at the command line prompt:\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "%s - %s\n", c.syntax, c.help)
	}
	b.WriteString("\nParameters are separated by commas. A parameter in double quotes is a Go string\n")
	b.WriteString("literal, for keys or values that hold commas: PUT \"a, b\" , \"x\"\n")
	return b.String()
}

func runGetAll(_ context.Context, sh *Shell, _ []string) outcome {
	sh.say("Properties for SharedConfig: '%s' :", sh.name)
	state := sh.cfg.State()
	if state.Len() == 0 {
		return ok
	}
	table := tablewriter.NewTable(sh.out,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off), // values keep their spaces, as GET shows them
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
	)
	table.Header("Key", "Value")
	for k, v := range state.All() {
		if err := table.Append(k, v); err != nil {
			return sh.fail(err)
		}
	}
	if err := table.Render(); err != nil {
		return sh.fail(err)
	}
	return ok
}

func runGet(_ context.Context, sh *Shell, args []string) outcome {
	key := args[0]
	if v, found := sh.cfg.Get(key); found {
		sh.say("The value of property '%s' is '%s'", key, v)
	} else {
		sh.warn("Property '%s' is undefined", key)
	}
	return ok
}

func runPut(ctx context.Context, sh *Shell, args []string) outcome {
	key, value := args[0], args[1]
	old, existed, err := sh.cfg.Put(ctx, key, value)
	if err != nil {
		return sh.fail(err)
	}
	if existed {
		sh.say("Property '%s' updated from: '%s' to: '%s'", key, old, value)
	} else {
		sh.say("Property '%s' added with value '%s'", key, value)
	}
	return ok
}

func runPutIfAbsent(ctx context.Context, sh *Shell, args []string) outcome {
	key, value := args[0], args[1]
	existing, existed, err := sh.cfg.PutIfAbsent(ctx, key, value)
	if err != nil {
		return sh.fail(err)
	}
	if existed {
		sh.say("Property '%s' exists with value '%s'", key, existing)
	} else {
		sh.say("Property '%s' added with value '%s'", key, value)
	}
	return ok
}

func runRemove(ctx context.Context, sh *Shell, args []string) outcome {
	key := args[0]
	if len(args) == 2 {
		current := args[1]
		removed, err := sh.cfg.RemoveIfValue(ctx, key, current)
		if err != nil {
			return sh.fail(err)
		}
		if removed {
			sh.say("Property '%s' is removed -- old value was '%s'", key, current)
		} else {
			sh.warn("Property '%s' was NOT removed -- current value did not match given value '%s'", key, current)
		}
		return ok
	}
	old, existed, err := sh.cfg.Remove(ctx, key)
	if err != nil {
		return sh.fail(err)
	}
	if existed {
		sh.say("Property '%s' is removed -- old value was '%s'", key, old)
	} else {
		sh.say("Property '%s' is undefined; nothing to remove", key)
	}
	return ok
}

func runReplace(ctx context.Context, sh *Shell, args []string) outcome {
	key, newValue := args[0], args[1]
	if len(args) == 3 {
		current := args[2]
		replaced, err := sh.cfg.ReplaceIfValue(ctx, key, current, newValue)
		if err != nil {
			return sh.fail(err)
		}
		if replaced {
			sh.say("Property '%s' had value '%s', now replaced with new value '%s'", key, current, newValue)
		} else {
			sh.warn("Property '%s' was NOT replaced -- current value did not match given value '%s'", key, current)
		}
		return ok
	}
	old, existed, err := sh.cfg.Replace(ctx, key, newValue)
	if err != nil {
		return sh.fail(err)
	}
	if existed {
		sh.say("Property '%s' had value '%s', now replaced with new value '%s'", key, old, newValue)
	} else {
		sh.say("Property '%s' is undefined", key)
	}
	return ok
}

func runClear(ctx context.Context, sh *Shell, _ []string) outcome {
	if _, err := sh.cfg.Clear(ctx); err != nil {
		return sh.fail(err)
	}
	sh.say("All properties removed")
	return ok
}

func runRefresh(ctx context.Context, sh *Shell, _ []string) outcome {
	if err := sh.cfg.Refresh(ctx); err != nil {
		return sh.fail(err)
	}
	sh.say("Properties refreshed")
	return ok
}

func runHelp(_ context.Context, sh *Shell, _ []string) outcome {
	fmt.Fprintln(sh.out, helpText())
	return ok
}

func runQuit(_ context.Context, sh *Shell, _ []string) outcome {
	sh.say("Exiting...")
	return quitNow
}
