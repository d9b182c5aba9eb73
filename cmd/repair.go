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
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

func newRepairCmd(f *rootFlags) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "repair",
		Short: "Write a damaged config's last good state past the entries that do not read",
		Long: `A config whose stream holds an entry that claims to be sharedconfig's but
does not decode stops every write: nothing after it can be applied. repair
lists the entries after the last good state (revision, time, writer, and what
each holds where it reads), then writes that state as a snapshot after the
stream's last entry, which drops them all. The snapshot is conditional: if
anyone writes meanwhile, or the config is destroyed and created again,
nothing changes. On a terminal it asks first;
otherwise it needs --yes. Export the config first to keep a copy.

A config whose stream was purged by hand up to an update it kept has no
state left before that update: repair then lists the entries left and writes
what they set as the config's state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return repairCommandFunc(cmd, f, yes) },
	}
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return c
}

func repairCommandFunc(cmd *cobra.Command, f *rootFlags, yes bool) error {
	s, err := openExisting(cmd, f, "REPAIR")
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := s.command(cmd.Context(), f.timeout)
	defer cancel()
	plan, err := s.cfg.Repair(ctx, sharedconfig.DryRun())
	if err != nil {
		return failedOn(cmd, f, "REPAIR", s, err)
	}
	if !plan.Damaged() {
		answer(cmd, f, "REPAIR", true, map[string]any{"repaired": false}, s.revision(),
			fmt.Sprintf("**** %s/%s reads to its end (revision %d): nothing to repair", f.scope, f.name, plan.LastRevision))
		return nil
	}
	if f.output == "text" {
		printRepairPlan(cmd, f, plan, s.cfg.State().Len())
	}
	if !yes {
		if !isTerminal(cmd.InOrStdin()) {
			what := "repair discards entries for good"
			if plan.Purged > 0 {
				what = "repair writes a state for good"
			}
			return &exitError{exitStartup, errors.New(what + ": give --yes to confirm when the input is not a terminal")}
		}
		if !confirm(cmd, "Repair?") {
			answer(cmd, f, "REPAIR", true, map[string]any{"repaired": false}, s.revision(), "**** Not repaired")
			return nil
		}
	}
	ctx, cancel = s.command(cmd.Context(), f.timeout)
	defer cancel()
	repaired, err := s.cfg.Repair(ctx, sharedconfig.IfUnchanged(plan))
	switch {
	case errors.Is(err, statesync.ErrConflict):
		err = fmt.Errorf("%w (someone wrote to the stream): run repair again to see the entries it would discard now", err)
	case errors.Is(err, statesync.ErrReplaced):
		err = fmt.Errorf("%w (the config was destroyed and created again): run repair again to see the entries it would discard now", err)
	}
	if err != nil {
		return failedOn(cmd, f, "REPAIR", s, err)
	}
	rev := repaired.Snapshot
	result := map[string]any{"repaired": true, "snapshot_revision": rev, "good_revision": plan.GoodRevision, "discarded": entryItems(plan.Discarded)}
	line := fmt.Sprintf("**** Repaired %s/%s: the snapshot at revision %d holds the state of revision %d; entries %d to %d are discarded",
		f.scope, f.name, rev, plan.GoodRevision, plan.GoodRevision+1, plan.LastRevision)
	if plan.Purged > 0 {
		delete(result, "good_revision")
		result["purged_up_to"], result["kept"], result["properties"] = plan.Purged, entryItems(plan.Kept), plan.Left.Len()
		line = fmt.Sprintf("**** Repaired %s/%s: the snapshot at revision %d holds what the entries after revision %d set (%s); what was set before them is gone",
			f.scope, f.name, rev, plan.Purged, repl.Counted(plan.Left.Len(), "property", "properties"))
	}
	answer(cmd, f, "REPAIR", true, result, at(rev), line)
	return nil
}

// entryItems are the entries repair keeps or discards, for -o json.
func entryItems(changes []sharedconfig.Change) []map[string]any {
	items := []map[string]any{}
	for _, d := range changes {
		item := map[string]any{"revision": d.Revision, "writer": d.Writer, "entry": describeDiscarded(d)}
		if d.Damage != "" {
			item["damage"] = d.Damage
		}
		items = append(items, item)
	}
	return items
}

// printRepairPlan shows what repair would write and discard.
func printRepairPlan(cmd *cobra.Command, f *rootFlags, plan sharedconfig.RepairReport, properties int) {
	out := cmd.OutOrStdout()
	if plan.Purged > 0 {
		fmt.Fprintf(out, "**** %s/%s was purged by hand up to revision %d, and what the entries left changed is gone. Repair writes what they set (%s) as its state, in a snapshot after revision %d; these entries are kept so:\n",
			f.scope, f.name, plan.Purged, repl.Counted(plan.Left.Len(), "property", "properties"), plan.LastRevision)
		printEntries(out, plan.Kept)
		if len(plan.Discarded) == 0 {
			return
		}
		fmt.Fprintln(out, "**** and these, from the first that does not read, are discarded:")
	} else {
		fmt.Fprintf(out, "**** Repair writes the last good state of %s/%s (revision %d, %s) as a snapshot after revision %d, discarding these entries:\n",
			f.scope, f.name, plan.GoodRevision, repl.Counted(properties, "property", "properties"), plan.LastRevision)
	}
	printEntries(out, plan.Discarded)
}

// printEntries is the table of the entries a repair keeps or discards.
func printEntries(out io.Writer, changes []sharedconfig.Change) {
	rows := [][]string{}
	for _, d := range changes {
		rows = append(rows, []string{strconv.FormatUint(d.Revision, 10), formatTime(d.Time), repl.Previewed(d.Writer), describeDiscarded(d)})
	}
	repl.PrintTable(out, []string{"Revision", "Time", "Writer", "Entry"}, rows)
}

// describeDiscarded says what an entry repair discards held: as LOG does,
// long keys, values and names by their start and size, and no more than
// the first describedOps operations.
func describeDiscarded(d sharedconfig.Change) string {
	switch {
	case d.Damage != "":
		return "DAMAGED: " + repl.Shown(d.Damage)
	case d.Foreign != "":
		return "FOREIGN: " + d.Foreign
	case d.Snapshot:
		return fmt.Sprintf("SNAPSHOT of %d properties", d.Properties)
	}
	ops := make([]string, 0, min(len(d.Ops), describedOps+1))
	for _, op := range d.Ops[:min(len(d.Ops), describedOps)] {
		ops = append(ops, describeOp(op))
	}
	if len(d.Ops) > describedOps {
		ops = append(ops, fmt.Sprintf("... and %d more (%d operations)", len(d.Ops)-describedOps, len(d.Ops)))
	}
	return strings.Join(ops, "; ")
}

// describedOps is how many operations of one entry the plan spells out, as
// LOG does: an import is one entry of every key.
const describedOps = 3

// describeOp is op as Op.String says it, each name and value previewed.
func describeOp(op sharedconfig.Op) string {
	switch op.Kind {
	case "put":
		return "PUT " + repl.Previewed(op.Key) + " = " + repl.Previewed(op.Value)
	case "remove":
		return "REMOVE " + repl.Previewed(op.Key)
	case "clear":
		return "CLEAR"
	}
	return strings.ToUpper(op.Kind) + " " + repl.Previewed(op.Lease)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(time.DateTime)
}
