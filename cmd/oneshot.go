package cmd

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/repl"
)

// The one-shot commands run one shell command and exit, for scripts and for
// hands used to etcdctl or "nats kv". They take the shell's flags, answer in
// its words (or JSON with -o json), and exit as a script does: 0 when the
// command ran, 1 when it failed, 2 when it could not start. Keys and values
// are whole arguments: commas in them are kept.

// addConfigCommands adds every command that works on one config, or on the
// configs of a server.
func addConfigCommands(root *cobra.Command, f *rootFlags) {
	for _, c := range []*cobra.Command{
		newGetCmd(f), newPutCmd(f), newRemoveCmd(f), newGetAllCmd(f), newKeysCmd(f), newHistoryCmd(f),
		newWatchCmd(f), newExecCmd(f), newMemberCmd(f),
		newListCmd(f), newExportCmd(f), newImportCmd(f), newDestroyCmd(f), newRepairCmd(f), newTimelineCmd(f),
	} {
		f.register(c)
		c.Args = sayUsage(c.Args)
		root.AddCommand(c)
	}
}

// sayUsage wraps an argument check so that its failure says what the
// command expects ("usage: sharedconfig put KEY VALUE") rather than cobra's
// "accepts 2 arg(s), received 1". Status 2, as any bad command line.
func sayUsage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if check == nil || check(c, args) == nil {
			return nil
		}
		use := strings.TrimSuffix(c.UseLine(), " [flags]")
		return &exitError{exitStartup, fmt.Errorf("usage: %s (see %s --help)", use, c.CommandPath())}
	}
}

// shellLine builds a shell line whose parameters read back exactly as
// given, commas, quotes and spaces included.
func shellLine(word string, params ...string) string {
	quoted := make([]string, len(params))
	for i, p := range params {
		quoted[i] = strconv.Quote(p)
	}
	return strings.TrimSpace(word + " " + strings.Join(quoted, " , "))
}

// runLines opens the config, creating it if need be, runs the shell lines
// in order up to a QUIT, and exits as a script would.
func runLines(cmd *cobra.Command, f *rootFlags, lines ...string) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	s, err := f.open(cmd)
	if err != nil {
		return err
	}
	return runOn(cmd, f, s, lines)
}

// readLines is runLines for commands that only read: a config the server
// does not hold is refused (status 1), not created.
func readLines(cmd *cobra.Command, f *rootFlags, command string, lines ...string) error {
	s, err := openExisting(cmd, f, command)
	if err != nil {
		return err
	}
	return runOn(cmd, f, s, lines)
}

// runOn runs the shell lines on an open session, then closes it.
func runOn(cmd *cobra.Command, f *rootFlags, s *session, lines []string) error {
	defer s.Close()
	for _, l := range lines {
		s.starts(f.timeout)
		s.sh.Execute(cmd.Context(), l)
		if isQuit(l) || s.sh.Failures() > 0 && f.stopOnError {
			break
		}
	}
	if s.sh.Failures() > 0 {
		return &exitError{code: exitFailures}
	}
	return nil
}

func isQuit(line string) bool {
	l, err := repl.Parse(line)
	return err == nil && (strings.EqualFold(l.Word, "QUIT") || strings.EqualFold(l.Word, "EXIT"))
}

type getFlags struct {
	valueOnly bool // --print-value-only, --raw
	prefix    bool
}

func newGetCmd(f *rootFlags) *cobra.Command {
	var g getFlags
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Print the value of KEY, as the shell's GET does",
		Long: `Print the value of KEY, as the shell's GET does. The value is the shared
config's latest: a one-shot command loads the config when it starts.

With --print-value-only (or --raw), the value alone, byte for byte, with a
newline after it only on a terminal (where characters that would drive the
terminal are escaped). With --prefix, KEY is a prefix: as get-all KEY.

Exit status 1 when KEY is undefined (as "nats kv get"), or when the server
holds no such config, which get does not create.`,
		Example: `  url=$(sharedconfig -s prod -n app get --print-value-only db.url)
  sharedconfig -s prod -n app get --prefix db.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return getCommandFunc(cmd, f, g, args[0]) },
	}
	c.Flags().BoolVar(&g.valueOnly, "print-value-only", false, "print the value alone, byte for byte (as etcdctl)")
	c.Flags().BoolVar(&g.valueOnly, "raw", false, "the same as --print-value-only (as nats kv)")
	c.Flags().BoolVar(&g.prefix, "prefix", false, "KEY is a prefix: print every property whose key starts with it")
	return c
}

// getCommandFunc runs "get". Opening the config has just read it to the
// end, so the value is as fresh as a REFRESH would make it.
func getCommandFunc(cmd *cobra.Command, f *rootFlags, g getFlags, key string) error {
	switch {
	case g.prefix && g.valueOnly:
		return &exitError{exitStartup, errors.New("--prefix and --print-value-only: give one (get-all -o json gives every value)")}
	case g.prefix:
		return readLines(cmd, f, "GET_ALL", shellLine("GET_ALL", key))
	}
	f.oneKey = key
	if g.valueOnly && key != "" {
		return printValue(cmd, f, key)
	}
	// An empty key is refused as GET refuses it.
	f.missingKeyFails = true
	return readLines(cmd, f, "GET", shellLine("GET", key))
}

// printValue prints the value of key alone: byte for byte into a pipe or
// a file, escaped and ended with a newline on a terminal.
func printValue(cmd *cobra.Command, f *rootFlags, key string) error {
	nc, via, err := f.dialToRead(cmd)
	if err != nil {
		return err
	}
	if p, found, ok := f.cachedValue(cmd.Context(), nc, key); ok {
		nc.Close()
		return writeValue(cmd, key, p.Value, found)
	}
	s, err := openExistingOn(cmd, f, "GET", nc, via)
	if err != nil {
		return err
	}
	defer s.Close()
	p, found := s.cfg.State().Lookup(key)
	return writeValue(cmd, key, p.Value, found)
}

// writeValue prints value, key's, for printValue.
func writeValue(cmd *cobra.Command, key, value string, found bool) error {
	if !found {
		fmt.Fprintf(cmd.ErrOrStderr(), "!!!! Property '%s' is undefined\n", repl.Shown(key))
		return &exitError{code: exitFailures}
	}
	if out := cmd.OutOrStdout(); writesToTerminal(out) {
		fmt.Fprintln(out, visible(value))
		return nil
	}
	_, _ = io.WriteString(cmd.OutOrStdout(), value) // a failure is the exit status's (checkedWriter)
	return nil
}

// writesToTerminal: w is a terminal, or standard output checked on its way
// to one.
func writesToTerminal(w io.Writer) bool {
	if c, ok := w.(*checkedWriter); ok {
		w = c.w
	}
	return isTerminal(w)
}

func newKeysCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "keys [PREFIX]",
		Aliases: []string{"ls"},
		Short:   "Print the keys (with PREFIX, those that start with it), one a line",
		Long: `Print the keys of the config (with PREFIX, those that start with it), one a
line, in order, as "nats kv ls" does; a key that holds a character that is
not printable is shown quoted, as the shell shows it. With -o json, one object:
{"command":"KEYS","ok":true,"result":{"keys":[...]}}.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return keysCommandFunc(cmd, f, args) },
	}
}

func keysCommandFunc(cmd *cobra.Command, f *rootFlags, args []string) error {
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	s, err := openExisting(cmd, f, "KEYS")
	if err != nil {
		return err
	}
	defer s.Close()
	keys := []string{}
	for k := range s.cfg.State().WithPrefix(prefix) {
		keys = append(keys, k)
	}
	if f.output == "json" {
		answer(cmd, f, "KEYS", true, map[string]any{"keys": keys}, s.revision())
		return nil
	}
	for _, k := range keys {
		fmt.Fprintln(cmd.OutOrStdout(), repl.Shown(k))
	}
	return nil
}

func newHistoryCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "history KEY",
		Short: "Print the values KEY had, with their revisions, as the shell's HISTORY does",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return readLines(cmd, f, "HISTORY", shellLine("HISTORY", args[0]))
		},
	}
}

func newPutCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Set KEY to VALUE, as the shell's PUT does",
		Example: `  sharedconfig put db.url 'postgres://db:5432/app'
  sharedconfig put list 'a, b, c'    # commas are part of the value
  sharedconfig put k -- -1           # a value that starts with '-'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return putCommandFunc(cmd, f, args) },
	}
}

func putCommandFunc(cmd *cobra.Command, f *rootFlags, args []string) error {
	return runLines(cmd, f, shellLine("PUT", args[0], args[1]))
}

func newRemoveCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "remove KEY",
		Aliases: []string{"rm", "del"},
		Short:   "Remove KEY, as the shell's REMOVE does",
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return removeCommandFunc(cmd, f, args) },
	}
}

func removeCommandFunc(cmd *cobra.Command, f *rootFlags, args []string) error {
	return runLines(cmd, f, shellLine("REMOVE", args[0]))
}

func newGetAllCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get-all [PREFIX]",
		Short: "Print every property (with PREFIX, those whose key starts with it), as GET_ALL does",
		Args:  cobra.MaximumNArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return getAllCommandFunc(cmd, f, args) },
	}
}

func getAllCommandFunc(cmd *cobra.Command, f *rootFlags, args []string) error {
	return readLines(cmd, f, "GET_ALL", shellLine("GET_ALL", args...))
}

func newWatchCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "watch [PREFIX]",
		Short: "Print each change others make (with PREFIX, to keys that start with it) until Ctrl-C",
		Long: `Print each change others make to the config as it lands, as FOLLOW ON does
(with PREFIX, narrowed to keys that start with it, as the shell's WATCH),
until Ctrl-C, SIGTERM or SIGHUP (unless started with it ignored, as by
nohup); then exit with status 0.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return watchCommandFunc(cmd, f, args) },
	}
}

func watchCommandFunc(cmd *cobra.Command, f *rootFlags, args []string) error {
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	s, err := openExisting(cmd, f, "WATCH")
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.sh.SetWatch(prefix); err != nil {
		return &exitError{exitStartup, err}
	}
	// A watching process writes the expiry of leases that fall due, as a
	// following shell does, so that a lease whose holder died ends on time
	// with nobody else running.
	stopKeeper := s.cfg.Leases().Keep(nil)
	// Say where watching starts, so that a reader knows every change after
	// that revision will show.
	from, _ := s.cfg.Revision() // with no state there too (a purge)
	if f.output == "json" {
		repl.WriteJSON(cmd.OutOrStdout(), map[string]any{"event": "watching", "scope": f.scope, "name": f.name, "prefix": prefix, "revision": from})
	} else {
		what := "every key"
		if prefix != "" {
			what = fmt.Sprintf("keys starting '%s'", repl.Shown(prefix))
		}
		fmt.Fprintf(cmd.OutOrStdout(), "**** Watching %s of %s/%s from revision %d (Ctrl-C to stop)\n", what, f.scope, f.name, from)
	}
	<-cmd.Context().Done()
	// Leaving takes ExitBudget at most, whatever the server does: then the
	// connection is cut, and whatever waited for the server fails at once.
	s.leaving()
	abort := time.AfterFunc(repl.ExitBudget, s.nc.Close)
	defer abort.Stop()
	s.sh.Close() // stop watching first: a fetch under way holds the config
	stopKeeper()
	return nil
}

func newExecCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "exec LINE...",
		Short: "Run shell command lines, one per argument, then exit",
		Example: `  sharedconfig exec 'PUT a, 1' 'PUT b, 2' 'GET_ALL'
  sharedconfig -o json exec 'REPLACE a, 2, 1'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return execCommandFunc(cmd, f, args) },
	}
}

// execCommandFunc runs each argument as a shell line; a failed one is
// named by its place among the arguments.
func execCommandFunc(cmd *cobra.Command, f *rootFlags, args []string) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	s, err := f.open(cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	// Leases the lines register are kept alive while they run and revoked
	// at the end, as a script's are.
	defer s.sh.KeepLeases()()
	for i, l := range args {
		s.starts(f.timeout)
		s.sh.ExecuteArgument(cmd.Context(), i+1, l)
		if isQuit(l) || s.sh.Failures() > 0 && f.stopOnError {
			break
		}
	}
	if s.sh.Failures() > 0 {
		return &exitError{code: exitFailures}
	}
	return nil
}
