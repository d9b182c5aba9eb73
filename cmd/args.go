package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// originalOptions are the original SharedConfigCLI's single-dash options.
// Left alone, pflag would read "-scope x" as "-s cope" and then take x for
// an argument.
var originalOptions = map[string]string{"-scope": "--scope", "-name": "--name", "-uri": "--server"}

// normalizeArgs rewrites the original's options to ours and refuses any
// other word of one dash and several letters, which pflag would misread as
// a shorthand with its value attached. Values of flags ("-s -odd") and
// everything after "--" are left as they are.
func normalizeArgs(root *cobra.Command, args []string) ([]string, error) {
	takesValue := flagsTakingValues(root)
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
			continue
		}
		word, _, hasValue := strings.Cut(a, "=")
		if long, ok := originalOptions[word]; ok {
			word, a = long, long+strings.TrimPrefix(a, word)
		}
		switch {
		case strings.HasPrefix(word, "--"):
		case len(word) == 2:
		default:
			return nil, fmt.Errorf("%s: options take two dashes (--%s), or one dash and one letter (-s NAME); put -- before an argument that starts with '-'", a, strings.TrimPrefix(word, "-"))
		}
		out = append(out, a)
		if !hasValue && takesValue[word] && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out, nil
}

// flagsTakingValues lists, as "--name" and "-x", the flags of root and its
// subcommands that take a value.
func flagsTakingValues(root *cobra.Command) map[string]bool {
	m := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.NoOptDefVal != "" {
				return
			}
			m["--"+fl.Name] = true
			if fl.Shorthand != "" {
				m["-"+fl.Shorthand] = true
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return m
}
