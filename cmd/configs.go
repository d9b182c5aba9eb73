package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/repl"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/exportfile"
)

// Configs as things to list, save, move and delete.

// answer prints a command's answer: its lines as text, or with -o json one
// object as the shell prints one per command, with the revision the
// config's copy stands at (none: nil, and no field).
func answer(cmd *cobra.Command, f *rootFlags, command string, ok bool, result map[string]any, revision *uint64, lines ...string) {
	out := cmd.OutOrStdout()
	if f.output == "json" {
		r := map[string]any{"command": command, "ok": ok}
		if revision != nil {
			r["revision"] = *revision
		}
		if result != nil {
			r["result"] = result
		}
		if !ok && len(lines) > 0 {
			r["error"] = strings.TrimPrefix(strings.TrimPrefix(lines[0], "!!!! Error: "), "!!!! ")
		}
		repl.WriteJSON(out, r)
		return
	}
	if !ok { // stdout carries only answers
		out = cmd.ErrOrStderr()
	}
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
}

// failed reports a command that ran into an error, with exit status 1.
func failed(cmd *cobra.Command, f *rootFlags, command string, err error) error {
	return failedOn(cmd, f, command, nil, err)
}

// failedOn is failed for a command on the config s has open (nil: none),
// whose copy's revision it gives.
func failedOn(cmd *cobra.Command, f *rootFlags, command string, s *session, err error) error {
	line := "!!!! Error: " + repl.DescribeError(err, f.timeout) + advice(err)
	if gone, ok := repl.DescribeGone(f.scope+"/"+f.name, err); ok {
		line = "!!!! " + repl.Shown(gone)
	}
	answer(cmd, f, command, false, nil, s.revision(), line)
	return &exitError{code: exitFailures}
}

// at is rev, for answer.
func at(rev uint64) *uint64 { return &rev }

func newListCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every config on the server: scope, name, properties, revision, last change",
		Long: `List every config on the server: scope, name, properties, revision, last change.
With --scope (-s), only the configs of that scope; with --name (-n), only those of that name.`,
		Example: `  sharedconfig list
  sharedconfig list -s prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return listCommandFunc(cmd, f) },
	}
}

func listCommandFunc(cmd *cobra.Command, f *rootFlags) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	nc, _, err := f.dial(cmd.Context())
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	configs, err := jetstream.ListConfigs(ctx, nc)
	if err != nil {
		return failed(cmd, f, "LIST", err)
	}
	configs, which := listed(cmd, f, configs)
	rows := [][]string{}
	list := []map[string]any{}
	for _, c := range configs {
		props, note := countProperties(cmd.Context(), f, nc, c)
		last := ""
		if !c.LastChange.IsZero() {
			last = c.LastChange.Local().Format(time.DateTime)
		}
		rows = append(rows, []string{c.Scope, c.Name, note, strconv.FormatUint(c.LastRevision, 10), last})
		item := map[string]any{"scope": c.Scope, "name": c.Name, "stream": c.Stream, "revision": c.LastRevision,
			"entries": c.Entries, "bytes": c.Bytes, "replicas": c.Replicas}
		if c.LastRevision == 0 { // no entry has a revision 0
			delete(item, "revision")
		}
		switch {
		case c.Unusable != "": // the error says it all
		case c.LastRevision == 0:
			item["note"] = "no entries: created, never written"
		case c.Entries == 0:
			item["note"] = "no entries: purged by hand (a write starts it afresh, empty)"
		}
		if props >= 0 {
			item["properties"] = props
		} else {
			item["error"] = note
		}
		if !c.LastChange.IsZero() {
			item["last_change"] = c.LastChange.UTC().Format(time.RFC3339Nano)
		}
		list = append(list, item)
	}
	answer(cmd, f, "LIST", true, map[string]any{"configs": list}, nil,
		fmt.Sprintf("**** %s%s on %s", repl.Counted(len(configs), "config", "configs"), which, shownURL(nc)))
	if f.output == "text" && len(rows) > 0 {
		repl.PrintTable(cmd.OutOrStdout(), []string{"Scope", "Name", "Properties", "Revision", "Last change"}, rows)
	}
	return nil
}

// listed is the configs of the scope and the name the flags give, if they
// give them, and how the answer's first line says which: " in scope prod".
func listed(cmd *cobra.Command, f *rootFlags, configs []jetstream.ConfigInfo) ([]jetstream.ConfigInfo, string) {
	byScope, byName := cmd.Flags().Changed("scope"), cmd.Flags().Changed("name")
	configs = slices.DeleteFunc(configs, func(c jetstream.ConfigInfo) bool {
		return byScope && c.Scope != f.scope || byName && c.Name != f.name
	})
	switch {
	case byScope && byName:
		return configs, fmt.Sprintf(" named %s/%s", f.scope, f.name)
	case byScope:
		return configs, " in scope " + f.scope
	case byName:
		return configs, " named " + f.name
	}
	return configs, ""
}

// countProperties reads a config to count its properties; a config that
// cannot be read says why instead (and the count is -1).
func countProperties(ctx context.Context, f *rootFlags, nc *nats.Conn, c jetstream.ConfigInfo) (int, string) {
	if c.Unusable != "" {
		// Checked before the count: an empty stream would otherwise
		// count as a config of no properties.
		return -1, "not usable as a config: " + c.Unusable
	}
	if c.LastRevision == 0 {
		return 0, "0"
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	log, err := jetstream.OpenLog(ctx, nc, c.Scope, c.Name, jetstream.LogOptions{})
	if err != nil {
		return -1, "unreadable: " + err.Error()
	}
	defer log.Close()
	cfg, err := sharedconfig.Open(ctx, log, sharedconfig.Options{MostlyReads: true})
	if cfg != nil {
		defer cfg.Close()
	}
	var damaged *sharedconfig.DamagedError
	if errors.As(err, &damaged) && damaged.StateGone() {
		return -1, fmt.Sprintf("unknown: purged by hand up to %d, then entry %d changes what went", damaged.Entry.Revision-1, damaged.Entry.Revision)
	}
	if errors.As(err, &damaged) {
		return -1, fmt.Sprintf("damaged at entry %d", damaged.Entry.Revision)
	}
	if err != nil {
		return -1, "unreadable: " + err.Error()
	}
	n := cfg.State().Len()
	return n, strconv.Itoa(n)
}

// openExisting opens the config the flags name, refusing (status 1) one
// the server does not hold rather than creating it: reads of a mistyped
// name must not leave a config behind.
func openExisting(cmd *cobra.Command, f *rootFlags, command string) (*session, error) {
	nc, via, err := f.dialToRead(cmd)
	if err != nil {
		return nil, err
	}
	return openExistingOn(cmd, f, command, nc, via)
}

// dialToRead checks the flags and connects, for a command that opens only
// an existing config.
func (f *rootFlags) dialToRead(cmd *cobra.Command) (*nats.Conn, string, error) {
	if err := f.check(cmd); err != nil {
		return nil, "", err
	}
	// The commands that open only an existing config read it (get, get-all,
	// export, watch, ...): they join the writers' turns only if they write.
	f.mostlyReads = true
	return f.dial(cmd.Context())
}

// openExistingOn is openExisting on a connection made by dialToRead, which
// the session then owns.
func openExistingOn(cmd *cobra.Command, f *rootFlags, command string, nc *nats.Conn, via string) (*session, error) {
	var err error
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	f.stream, err = jetstream.LookUpConfig(ctx, nc, f.scope, f.name)
	cancel()
	if errors.Is(err, jetstream.ErrNoConfig) {
		answer(cmd, f, command, false, nil, nil, "!!!! "+noConfigLine(cmd.Context(), f, nc))
		nc.Close()
		return nil, &exitError{code: exitFailures}
	}
	if err != nil {
		nc.Close()
		return nil, failed(cmd, f, command, err)
	}
	s, err := f.openOn(cmd, nc, via)
	// A server that stops answering while the config is read is the same
	// failure as one that stops before, at the look-up: one line, status 1.
	if opening := (*exitError)(nil); errors.As(err, &opening) && errors.Is(opening.err, context.DeadlineExceeded) {
		return nil, failed(cmd, f, command, opening.err)
	}
	// A config whose state is gone has nothing to read: one line, status
	// 1. Repair is what mends it.
	if line, gone := repl.DescribeGone(f.scope+"/"+f.name, s.stateGone()); gone && command != "REPAIR" {
		s.Close()
		answer(cmd, f, command, false, nil, nil, "!!!! "+repl.Shown(line))
		return nil, &exitError{code: exitFailures}
	}
	return s, err
}

// noConfigLine says that the config the flags name is not on the server,
// and how to make it: a PUT, unless another program's stream takes its
// subject, when no PUT can.
func noConfigLine(ctx context.Context, f *rootFlags, nc *nats.Conn) string {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	owner, err := jetstream.SubjectTakenBy(ctx, nc, f.scope, f.name)
	if err == nil && owner != "" {
		return fmt.Sprintf("no config %s/%s on the server, and none can be made: stream %s, not sharedconfig's, takes its subject %s (take it out of that stream's subjects, or use another scope or name)",
			f.scope, f.name, repl.Shown(owner), jetstream.Subject(f.scope, f.name))
	}
	return fmt.Sprintf("no config %s/%s on the server (list shows the configs; a PUT creates one)", f.scope, f.name)
}

func newExportCmd(f *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "export",
		Short: "Write the config as JSON on standard output, with the revision of each value",
		Example: `  sharedconfig -s prod -n app export > app.json
  sharedconfig -s test -n app import app.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return exportCommandFunc(cmd, f) },
	}
}

func exportCommandFunc(cmd *cobra.Command, f *rootFlags) error {
	s, err := openExisting(cmd, f, "EXPORT")
	if err != nil {
		return err
	}
	defer s.Close()
	// Indented for people and diffs; on one line with -o json, as every
	// answer is there.
	exported := exportfile.New(f.scope, f.name, s.cfg.State())
	b, err := json.MarshalIndent(exported, "", "  ")
	if f.output == "json" {
		b, err = json.Marshal(exported)
	}
	if err != nil {
		return failedOn(cmd, f, "EXPORT", s, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s\n", repl.SafeJSON(b))
	if s.damaged != nil {
		// The last good state is worth keeping, but it is not the config:
		// a script must not take it for a whole export.
		fmt.Fprintf(cmd.ErrOrStderr(), "!!!! the export is partial: it holds revision %d, the last good state, not what comes after the damage at entry %d\n", s.damaged.GoodRevision, s.damaged.Entry.Revision)
		return &exitError{exitFailures, nil}
	}
	return nil
}

func newImportCmd(f *rootFlags) *cobra.Command {
	var replace bool
	var leased string
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Set the keys and values in FILE (what export writes, or a JSON object of keys to values) in one update",
		Long: `Set the keys and values in FILE in one conditional update: all of them land,
or none. FILE is what export writes or a plain JSON object of keys to string
values; - reads standard input. Keys that already have their value are not
written. With --replace, keys that FILE lacks are removed in the same update.

An export marks the keys that were attached to a lease. A lease lives only
while its holder keeps it alive, and import does not recreate it: a file
with leased keys is refused unless --leased says what to do with them (skip:
leave them out; plain: import them as plain keys, which stay until removed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return importCommandFunc(cmd, f, args[0], replace, leased)
		},
	}
	c.Flags().BoolVar(&replace, "replace", false, "remove the keys FILE lacks, so that the config becomes exactly FILE")
	c.Flags().StringVar(&leased, "leased", "", "what to do with keys FILE marks as leased: `skip` them, or import them as `plain` keys (default: refuse the file)")
	return c
}

func importCommandFunc(cmd *cobra.Command, f *rootFlags, file string, replace bool, leased string) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	if leased != "" && leased != "skip" && leased != "plain" {
		return &exitError{exitStartup, fmt.Errorf("--leased takes skip or plain, not %q", leased)}
	}
	data, err := readImportFile(cmd.InOrStdin(), file)
	if err != nil {
		return &exitError{exitStartup, err}
	}
	parsed, err := exportfile.Parse(data)
	if err != nil {
		return &exitError{exitStartup, fmt.Errorf("%s: %w", file, err)}
	}
	props, note, err := leasedKeys(parsed, leased)
	if err != nil {
		return &exitError{exitStartup, fmt.Errorf("%s: %w", file, err)}
	}
	s, err := f.open(cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := s.command(cmd.Context(), f.timeout)
	defer cancel()
	r, err := s.cfg.Import(ctx, props, replace)
	if err != nil {
		return failedOn(cmd, f, "IMPORT", s, err)
	}
	rev := s.cfg.State().Revision()
	result := map[string]any{"added": r.Added, "updated": r.Updated, "unchanged": r.Unchanged, "removed": r.Removed}
	if len(parsed.Leased) > 0 {
		result["leased_"+leased] = len(parsed.Leased)
	}
	if r.AsSnapshot {
		result["snapshot"] = true
		note += "; too large for one update, so written as one snapshot, which drops the history before it (LOG starts there)"
	}
	answer(cmd, f, "IMPORT", true, result, at(rev),
		fmt.Sprintf("**** Imported %s into %s/%s: %d added, %d updated, %d unchanged, %d removed; now at revision %d%s",
			repl.Counted(len(props), "property", "properties"), f.scope, f.name, r.Added, r.Updated, r.Unchanged, r.Removed, rev, note))
	return nil
}

// leasedKeys applies --leased to the keys an export marks as attached to a
// lease, and returns the keys and values to import with a note on what
// became of the leased ones. A lease belongs to a running holder, so
// importing its keys as they are would make them permanent: without
// --leased that is refused.
func leasedKeys(file exportfile.Import, leased string) (map[string]string, string, error) {
	n := len(file.Leased)
	if n == 0 {
		return file.Props, "", nil
	}
	keys := repl.Counted(n, "leased key", "leased keys")
	switch leased {
	case "skip":
		return file.WithoutLeased(), " (" + keys + " left out)", nil
	case "plain":
		return file.Props, " (" + keys + " imported with no lease)", nil
	}
	first := slices.Min(slices.Collect(maps.Keys(file.Leased)))
	return nil, "", fmt.Errorf("%s attached to leases (%s: lease %s), which live only while their holders keep them alive, so importing would make them permanent: give --leased=skip to leave them out, or --leased=plain to import them as plain keys",
		repl.Counted(n, "key is", "keys are"), strconv.Quote(first), strconv.Quote(file.Leased[first]))
}

func newDestroyCmd(f *rootFlags) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "destroy",
		Short: "Delete the config: its stream and every entry in it",
		Long: `Delete the config: its stream and every entry in it. This cannot be undone
(export it first to keep a copy). On a terminal it asks first; otherwise it
needs --yes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return destroyCommandFunc(cmd, f, yes) },
	}
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return c
}

func destroyCommandFunc(cmd *cobra.Command, f *rootFlags, yes bool) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	if !yes && !isTerminal(cmd.InOrStdin()) {
		return &exitError{exitStartup, errors.New("destroy deletes the config for good: give --yes to confirm when the input is not a terminal")}
	}
	nc, _, err := f.dial(cmd.Context())
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	info, err := jetstream.StatConfig(ctx, nc, f.scope, f.name)
	if err != nil {
		return failed(cmd, f, "DESTROY", err)
	}
	what := fmt.Sprintf("%s/%s (stream %s: %s, last revision %d)", f.scope, f.name, info.Stream, repl.Counted(info.Entries, "entry", "entries"), info.LastRevision)
	if !yes && !confirm(cmd, "Destroy "+what+"? This cannot be undone.") {
		answer(cmd, f, "DESTROY", true, map[string]any{"destroyed": false}, at(info.LastRevision), "**** Not destroyed")
		return nil
	}
	ctx, cancel = context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	if err := jetstream.DeleteConfig(ctx, nc, f.scope, f.name); err != nil {
		return failed(cmd, f, "DESTROY", err)
	}
	answer(cmd, f, "DESTROY", true, map[string]any{"destroyed": true, "stream": info.Stream}, at(info.LastRevision), "**** Destroyed "+what)
	return nil
}

// confirm asks a yes/no question on the terminal; only yes or y agrees.
// Ctrl-C (or SIGTERM) while it waits is a no, at once: the line read would
// otherwise wait for Enter. The read it leaves behind ends with the process.
func confirm(cmd *cobra.Command, question string) bool {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	case <-cmd.Context().Done():
		fmt.Fprintln(cmd.ErrOrStderr()) // off the question's line
		return false
	}
}

// maxImportFile bounds what import reads: /dev/zero or an endless pipe
// would otherwise take all the memory there is. It is far above any config
// this program is made for (a 100,000-key one exports as a few MB), and
// what it costs (reading it, then its keys and values) stays within what
// a shared machine can spare.
var maxImportFile int64 = 256 << 20

// readImportFile reads import's FILE (- is stdin), up to maxImportFile.
func readImportFile(stdin io.Reader, file string) ([]byte, error) {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxImportFile+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxImportFile {
		name := file
		if file == "-" {
			name = "standard input"
		}
		return nil, fmt.Errorf("%s: larger than %d MiB, more than any config holds: not read further", name, maxImportFile>>20)
	}
	return data, nil
}
