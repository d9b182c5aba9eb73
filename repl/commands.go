package repl

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// command is one row of the command table. The same rows drive dispatch,
// the parameter checks, HELP and completion.
type command struct {
	name    string
	aliases []string
	help    string // HELP's line is "syntax - help"
	params  []param
	// usageText, if set, is the usage warning instead of the one made
	// from params (GET keeps the original's).
	usageText string
	// run gets parameters that passed checkArgs.
	run func(ctx context.Context, sh *Shell, args []string) reply
}

// outcome is how a command ended, for the exit status of a script.
type outcome int

const (
	ok      outcome = iota // done, whatever its answer
	failed                 // an error, or a line that could not run
	quitNow                // QUIT
)

// commands is the table. HELP lists the rows in this order; the texts of the
// original SharedConfigCLI's commands are its own.
var commands []*command

func init() {
	key := param{name: "key", kind: keyParam}
	onOff := param{kind: choiceParam, choices: []string{"ON", "OFF"}}
	commands = []*command{
		{name: "GET_ALL", help: "prints out all of the properties in the Shared Config (with a prefix, only the keys that start with it).",
			params: []param{{name: "prefix", optional: true, kind: prefixParam}}, run: runGetAll},
		{name: "GET", help: "print out the configuration property for the given key.",
			params: []param{key}, usageText: "Please enter a key to retrieve", run: runGet},
		{name: "PUT", help: "update the Shared Config with the given key/value pair.  Print out previous value (if it existed).",
			params: []param{key, {name: "value", kind: valueParam}}, run: runPut},
		{name: "PUT_IF_ABSENT", aliases: []string{"PUT_IF_ABCENT"}, help: "update the Shared Config with the given key/value pair, only if the property is not already defined.",
			params: []param{key, {name: "value", kind: valueParam}}, run: runPutIfAbsent},
		{name: "REMOVE", help: "remove the given property from the Shared Config.  If {currentValue} is given, remove only if the property's current value matches {currentValue}.",
			params: []param{key, {name: "currentValue", optional: true, kind: valueParam}}, run: runRemove},
		{name: "REPLACE", help: "update the value of the property.  If {currentValue} is given, update only if the property's current value matches {currentValue}.",
			params: []param{key, {name: "newValue", kind: valueParam}, {name: "currentValue", optional: true, kind: valueParam}}, run: runReplace},
		{name: "REPLACE_IF_REVISION", help: "update the value of the property only if it was last set at {revision} (HISTORY {key} shows it, and GET in a shell started with --revisions).",
			params: []param{key, {name: "newValue", kind: valueParam}, {name: "revision", kind: countParam, noun: "revision"}}, run: runReplaceIfRevision},
		{name: "CLEAR", help: "remove all the keys from the Shared Config.", run: runClear},
		{name: "REFRESH", help: "force an update from the Synchronized State.", run: runRefresh},
		{name: "LOG", help: "print the last n entries of the stream (default 10): revision, time, writer, operation; snapshots marked.",
			params: []param{{name: "n", optional: true, kind: countParam, noun: "number of entries"}}, run: runLog},
		{name: "HISTORY", help: "print the values a property had, with their revisions, as far back as compaction allows.",
			params: []param{key}, run: runHistory},
		{name: "STATUS", help: "print the stream, the server, the local revision against the stream's, and more.", run: runStatus},
		{name: "COMPACT", help: "write a snapshot now, dropping the history before it.", run: runCompact},
		{name: "FOLLOW", help: "keep the local copy current without REFRESH, printing each change others make as it lands.",
			params: []param{onOff}, run: runFollow},
		{name: "WATCH", help: "keep the local copy current, printing each change others make to keys that start with {prefix} as it lands; WATCH alone is FOLLOW ON, WATCH OFF stops.",
			params: []param{{name: "prefix", optional: true, kind: prefixParam}}, run: runWatch},
		{name: "TRACE", help: "print every try of every write: the revision it was based on, conflicts, catching up, the commit.",
			params: []param{onOff}, run: runTrace},
	}
	commands = append(commands, leaseRows()...)
	commands = append(commands, []*command{
		{name: "HELP", help: "print out a list of commands; with {command}, that command's syntax and help.",
			params: []param{{name: "command", optional: true, kind: commandParam}}, run: runHelp},
		{name: "QUIT", aliases: []string{"EXIT"}, help: "terminate the program.", run: runQuit},
	}...)
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

// unknownCommand is the answer to a word that names no command. When the
// word is a command with its parameters run on without a space (PUT,a,b),
// or one slip (a letter wrong, missing, extra or two swapped) from exactly
// one command's name (PTU, GETALL), it says so.
func unknownCommand(word string) reply {
	if before, _, ok := strings.Cut(word, ","); ok && lookup(before) != nil {
		return refuse("Unknown command: '%s' (put a space after %s; HELP lists the commands)", word, before)
	}
	if name := nearestCommand(word); name != "" {
		return refuse("Unknown command: '%s' (did you mean %s? HELP lists the commands)", word, name)
	}
	return refuse("Unknown command: '%s' (HELP lists the commands)", word)
}

// nearestCommand is the one command whose name (or alias) is closest to
// word, if it is close enough to be a slip: one edit for a word of up to
// four letters, two for a longer one; "" when none is, or two are.
func nearestCommand(word string) string {
	if len(word) > 40 {
		return ""
	}
	word = strings.ToUpper(word)
	most := 1
	if len(word) > 4 {
		most = 2
	}
	best, bestName, tied := most+1, "", false
	for _, c := range commands {
		d := editDistance(word, c.name)
		for _, a := range c.aliases {
			d = min(d, editDistance(word, a))
		}
		switch {
		case d < best:
			best, bestName, tied = d, c.name, false
		case d == best:
			tied = true
		}
	}
	if best > most || tied {
		return ""
	}
	return bestName
}

// editDistance counts the letters to change, add, remove or swap with the
// next (optimal string alignment) to make a into b.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Counted is "1 entry", "2 entries": a number and the noun in its form for it.
func Counted[N int | uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// helpText is HELP's output, built from the table.
func helpText() string {
	var b strings.Builder
	b.WriteString("Enter one of the following commands at the command line prompt:\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "%s - %s\n", c.syntax(), c.help)
	}
	b.WriteString("\nParameters are separated by commas. A parameter in double quotes is a Go string\n")
	b.WriteString("literal, for keys or values that hold commas: PUT \"a, b\" , \"x\"\n")
	return b.String()
}

func propertyFields(key string, p sharedconfig.Property) fields {
	f := fields{"key": key, "value": p.Value, "revision": p.Revision}
	if p.Lease != "" {
		f["lease"] = p.Lease
	}
	return f
}

// unknown is the failure of a read of a config whose state is gone: it
// has nothing true to answer.
func (sh *Shell) unknown() (reply, bool) {
	if err := sh.cfg.StateGone(); err != nil {
		return sh.failure(err), true
	}
	return reply{}, false
}

func runGetAll(_ context.Context, sh *Shell, args []string) reply {
	if r, gone := sh.unknown(); gone {
		return r
	}
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	r := answer(say("Properties for SharedConfig: '%s' :", sh.name), nil)
	props := []fields{}
	t := &table{header: []string{"Key", "Value"}}
	if sh.revisions {
		t.header = append(t.header, "Revision")
	}
	for k, p := range sh.cfg.State().WithPrefix(prefix) {
		props = append(props, propertyFields(k, p))
		row := []string{k, p.Value}
		if sh.revisions {
			row = append(row, strconv.FormatUint(p.Revision, 10)+underLease(p.Lease))
		}
		t.rows = append(t.rows, row)
	}
	if len(t.rows) > 0 {
		r.table = t
	} else if prefix != "" {
		r.lines = append(r.lines, say("No properties start with '%s'", prefix))
	}
	r.result = fields{"properties": props}
	if prefix != "" {
		r.result["prefix"] = prefix
	}
	return r
}

func runGet(_ context.Context, sh *Shell, args []string) reply {
	if r, gone := sh.unknown(); gone {
		return r
	}
	key := args[0]
	p, found := sh.cfg.State().Lookup(key)
	if !found {
		r := answer(warn("Property '%s' is undefined", key), fields{"key": key, "found": false})
		if sh.missingKeyFails {
			r.outcome, r.err = failed, strings.TrimPrefix(r.lines[0], "!!!! ")
		}
		return r
	}
	line := say("The value of property '%s' is '%s'", key, p.Value)
	if sh.revisions {
		line += fmt.Sprintf(" (set at revision %d%s)", p.Revision, underLease(p.Lease))
	}
	f := propertyFields(key, p)
	f["found"] = true
	return answer(line, f)
}

// failure is the reply for a command that ran into an error.
func (sh *Shell) failure(err error) reply {
	if sh.cancelled.Load() || sh.stoppedBy(err) {
		msg := describeCancel(err)
		return reply{outcome: failed, lines: []string{warn("%s", msg)}, err: msg, stopped: sh.stoppedBy(err)}
	}
	if msg, ok := sh.describeLost(err); ok {
		return reply{outcome: failed, lines: []string{warn("%s", msg)}, err: msg}
	}
	msg := sh.explain(err, sh.timeout)
	return reply{outcome: failed, lines: []string{warn("Error: %s", msg)}, err: msg}
}

func runPut(ctx context.Context, sh *Shell, args []string) reply {
	key, value := args[0], args[1]
	r, err := sh.cfg.Put(ctx, key, value)
	if err != nil {
		return sh.failure(err)
	}
	old := r.Previous.Value
	f := fields{"key": key, "value": value, "existed": r.Existed}
	if r.Existed {
		f["previous"] = old
		return answer(say("Property '%s' updated from: '%s' to: '%s'", key, old, value), f)
	}
	return answer(say("Property '%s' added with value '%s'", key, value), f)
}

func runPutIfAbsent(ctx context.Context, sh *Shell, args []string) reply {
	key, value := args[0], args[1]
	r, err := sh.cfg.Put(ctx, key, value, sharedconfig.IfAbsent())
	if err != nil {
		return sh.failure(err)
	}
	if !r.Written {
		existing := r.Previous.Value
		return answer(say("Property '%s' exists with value '%s'", key, existing), fields{"key": key, "added": false, "existing": existing})
	}
	return answer(say("Property '%s' added with value '%s'", key, value), fields{"key": key, "value": value, "added": true})
}

func runRemove(ctx context.Context, sh *Shell, args []string) reply {
	key := args[0]
	if len(args) == 2 {
		current := args[1]
		r, err := sh.cfg.Remove(ctx, key, sharedconfig.IfValue(current))
		if err != nil {
			return sh.failure(err)
		}
		f := fields{"key": key, "expected": current, "removed": r.Written}
		if r.Written {
			return answer(say("Property '%s' is removed -- old value was '%s'", key, current), f)
		}
		return answer(warn("Property '%s' was NOT removed -- current value did not match given value '%s'", key, current), f)
	}
	r, err := sh.cfg.Remove(ctx, key)
	if err != nil {
		return sh.failure(err)
	}
	if r.Written {
		old := r.Previous.Value
		return answer(say("Property '%s' is removed -- old value was '%s'", key, old), fields{"key": key, "removed": true, "previous": old})
	}
	return answer(say("Property '%s' is undefined; nothing to remove", key), fields{"key": key, "removed": false})
}

func runReplace(ctx context.Context, sh *Shell, args []string) reply {
	key, newValue := args[0], args[1]
	if len(args) == 3 {
		current := args[2]
		r, err := sh.cfg.Replace(ctx, key, newValue, sharedconfig.IfValue(current))
		if err != nil {
			return sh.failure(err)
		}
		f := fields{"key": key, "value": newValue, "expected": current, "replaced": r.Written}
		if r.Written {
			return answer(say("Property '%s' had value '%s', now replaced with new value '%s'", key, current, newValue), f)
		}
		return answer(warn("Property '%s' was NOT replaced -- current value did not match given value '%s'", key, current), f)
	}
	r, err := sh.cfg.Replace(ctx, key, newValue)
	if err != nil {
		return sh.failure(err)
	}
	if r.Written {
		old := r.Previous.Value
		return answer(say("Property '%s' had value '%s', now replaced with new value '%s'", key, old, newValue), fields{"key": key, "value": newValue, "replaced": true, "previous": old})
	}
	return answer(say("Property '%s' is undefined", key), fields{"key": key, "replaced": false})
}

func runReplaceIfRevision(ctx context.Context, sh *Shell, args []string) reply {
	key, newValue := args[0], args[1]
	revision, _ := strconv.ParseUint(args[2], 10, 64) // checked: 1 or more
	r, err := sh.cfg.Replace(ctx, key, newValue, sharedconfig.IfRevision(revision))
	if err != nil {
		return sh.failure(err)
	}
	replaced, current, found := r.Written, r.Previous, r.Existed
	f := fields{"key": key, "value": newValue, "expected_revision": revision, "replaced": replaced, "found": found}
	switch {
	case replaced:
		f["previous"] = current.Value
		return answer(say("Property '%s' had revision %d, now replaced with new value '%s'", key, revision, newValue), f)
	case found:
		f["current"], f["current_revision"] = current.Value, current.Revision
		return answer(warn("Property '%s' was NOT replaced -- it was last set at revision %d, not %d", key, current.Revision, revision), f)
	}
	return answer(warn("Property '%s' was NOT replaced -- it is undefined", key), f)
}

func runClear(ctx context.Context, sh *Shell, _ []string) reply {
	n, err := sh.cfg.Clear(ctx)
	if err != nil {
		return sh.failure(err)
	}
	return answer(say("All properties removed"), fields{"removed": n})
}

func runRefresh(ctx context.Context, sh *Shell, _ []string) reply {
	if err := sh.cfg.Refresh(ctx); err != nil {
		return sh.failure(err)
	}
	return answer(say("Properties refreshed"), nil)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("15:04:05.000")
}

func changeFields(ch sharedconfig.Change) fields {
	f := fields{"revision": ch.Revision, "writer": ch.Writer}
	if !ch.Time.IsZero() {
		f["time"] = ch.Time.UTC().Format(time.RFC3339Nano)
	}
	if ch.Damage != "" { // a snapshot's too: what it holds did not read
		f["damage"] = ch.Damage
		return f
	}
	if ch.Snapshot {
		f["snapshot"] = true
		f["properties"] = ch.Properties
		if len(ch.Ops) > 0 { // a watch's: what it implies under the prefix
			f["ops"] = opsFields(ch.Ops)
		}
		return f
	}
	if ch.Foreign != "" {
		f["foreign"] = ch.Foreign
		return f
	}
	f["ops"] = opsFields(ch.Ops)
	if len(ch.Ended) > 0 {
		f["ended"] = endedFields(ch.Ended)
	}
	return f
}

func opsFields(ops []sharedconfig.Op) []fields {
	list := []fields{}
	for _, op := range ops {
		o := fields{"op": op.Kind}
		if op.Kind == "put" || op.Kind == "remove" {
			o["key"] = op.Key
		}
		if op.Kind == "put" {
			o["value"] = op.Value
		}
		if op.HandedBy != "" {
			o["handed_by"] = op.HandedBy
		}
		leaseOpFields(o, op)
		list = append(list, o)
	}
	return list
}

// describeChange is a change as LOG, follow mode and WATCH show it.
func describeChange(ch sharedconfig.Change) (operation, arguments string) {
	if ch.Damage != "" { // a snapshot's too: what it holds did not read
		return "DAMAGED", shown(ch.Damage) // it may quote what the entry holds
	}
	if ch.Snapshot && len(ch.Ops) > 0 { // a watch's: what it implies under the prefix
		implied := make([]string, len(ch.Ops))
		for i, op := range ch.Ops {
			o, a := describeChange(sharedconfig.Change{Ops: []sharedconfig.Op{op}})
			implied[i] = strings.TrimSpace(o + " " + a)
		}
		return "SNAPSHOT", Counted(ch.Properties, "property", "properties") + " under the prefix, implying " + strings.Join(implied, "; ")
	}
	if ch.Snapshot {
		return "SNAPSHOT", Counted(ch.Properties, "property", "properties") + "; replaces all before it"
	}
	if ch.Foreign != "" {
		return "FOREIGN", "skipped: " + ch.Foreign
	}
	var ops, args []string
	for _, op := range ch.Ops {
		if o, a, ok := describeLeaseOp(op); ok {
			ops, args = append(ops, o), append(args, a)
			continue
		}
		switch op.Kind {
		case "put":
			ops = append(ops, "PUT")
			a := previewQuoted(op.Key) + " , " + previewQuoted(op.Value)
			if op.HandedBy != "" {
				a += " (handed by " + previewed(op.HandedBy) + ")"
			}
			args = append(args, a)
		case "remove":
			ops = append(ops, "REMOVE")
			args = append(args, previewQuoted(op.Key))
		default:
			ops = append(ops, "CLEAR")
		}
	}
	if len(ops) > describedOps {
		more := fmt.Sprintf("... and %d more (%d operations)", len(ops)-describedOps, len(ops))
		ops, args = append(ops[:describedOps], "..."), append(args[:describedOps], more)
	}
	return strings.Join(ops, "; "), strings.Join(args, "; ")
}

// describeChangeLine is a change as follow mode and WATCH show it on one
// line: each operation with its arguments ("PUT a , 1; PUT b , 2 (handed
// by bob)"), where LOG's table gives them in two columns.
func describeChangeLine(ch sharedconfig.Change) string {
	if len(ch.Ops) < 2 || ch.Snapshot || ch.Damage != "" || ch.Foreign != "" {
		op, args := describeChange(ch)
		return strings.TrimSpace(op + " " + args)
	}
	parts := make([]string, 0, describedOps+1)
	for i, op := range ch.Ops {
		if i == describedOps {
			parts = append(parts, fmt.Sprintf("... and %d more (%d operations)", len(ch.Ops)-describedOps, len(ch.Ops)))
			break
		}
		o, a := describeChange(sharedconfig.Change{Ops: []sharedconfig.Op{op}})
		parts = append(parts, strings.TrimSpace(o+" "+a))
	}
	return strings.Join(parts, "; ")
}

// describedOps is how many operations of one entry LOG and follow mode
// spell out: an import is one entry of every key and value, and a line is
// no place for all of them (-o json and HISTORY give each).
const describedOps = 3

func runLog(ctx context.Context, sh *Shell, args []string) reply {
	n := 10
	if len(args) == 1 {
		asked, _ := strconv.ParseUint(args[0], 10, 64) // checked
		n = int(min(asked, math.MaxInt))
	}
	changes, err := sh.cfg.History(ctx, "", n)
	if err != nil {
		return sh.failure(err)
	}
	r := answer(say("Last %s of stream %s:", Counted(len(changes), "entry", "entries"), sh.cfg.Log().Name()), nil)
	t := &table{header: []string{"Revision", "Time", "Writer", "Operation", "Arguments"}}
	entries := []fields{}
	for _, ch := range changes {
		op, a := describeChange(ch)
		if len(ch.Ended) > 0 {
			a += " -- " + describeEnded(ch.Ended)
		} else if witness(ch) {
			a += " -- a witness: it ended nothing (not due, or already gone)"
		}
		t.rows = append(t.rows, []string{strconv.FormatUint(ch.Revision, 10), formatTime(ch.Time), previewed(ch.Writer), op, a})
		entries = append(entries, changeFields(ch))
	}
	r.table = t
	r.result = fields{"entries": entries}
	return r
}

func runHistory(ctx context.Context, sh *Shell, args []string) reply {
	key := args[0]
	changes, err := sh.cfg.History(ctx, key, 0)
	if err != nil {
		return sh.failure(err)
	}
	start := uint64(1) // no snapshot: the log holds all of it
	if len(changes) > 0 && changes[0].Snapshot {
		start = changes[0].Revision
		if len(changes[0].Ops) == 0 { // the key had no value there
			changes = changes[1:]
		}
	}
	note := "the whole history"
	if start > 1 {
		note = fmt.Sprintf("history before revision %d was compacted away", start)
	}
	if len(changes) == 0 {
		return answer(say("Property '%s' has no history (%s)", key, note), fields{"key": key, "complete_from": start, "changes": []fields{}})
	}
	r := answer(say("History of property '%s' (%s):", key, note), nil)
	t := &table{header: []string{"Revision", "Time", "Writer", "Value"}}
	list := []fields{}
	for _, ch := range changes {
		op := ch.Ops[0] // the one put or remove of key
		removed := op.Kind == "remove"
		text, size := previewShown(op.Value)
		value, f := "'"+text+"'"+size, fields{"revision": ch.Revision, "writer": ch.Writer}
		switch {
		case removed:
			value = "(removed" + removedWithLease(ch) + ")"
			f["removed"] = true
		case ch.Snapshot:
			value += " (from the snapshot)"
			f["value"], f["from_snapshot"] = op.Value, true
		default:
			f["value"] = op.Value
		}
		if op.Lease != "" {
			f["lease"] = op.Lease
			if !removed {
				value += " (lease " + Quote(op.Lease) + ")"
			}
		}
		if op.HandedBy != "" {
			f["handed_by"] = op.HandedBy
			value += " (handed by " + previewed(op.HandedBy) + ")"
		}
		if !ch.Time.IsZero() {
			f["time"] = ch.Time.UTC().Format(time.RFC3339Nano)
		}
		t.rows = append(t.rows, []string{strconv.FormatUint(ch.Revision, 10), formatTime(ch.Time), previewed(ch.Writer), value})
		list = append(list, f)
	}
	r.table = t
	r.result = fields{"key": key, "complete_from": start, "changes": list}
	return r
}

func runStatus(ctx context.Context, sh *Shell, _ []string) reply {
	st, err := sh.cfg.Status(ctx)
	if err != nil {
		return sh.failure(err)
	}
	lag := int64(st.LastRevision) - int64(st.Revision)
	on, prefix := sh.watching()
	watched := "off"
	switch {
	case on && prefix == "":
		watched = "every key"
	case on:
		watched = "keys starting '" + prefix + "'" // escaped by say
	}
	replicas := 1
	if r, ok := sh.cfg.Log().(interface{ Replicas() int }); ok {
		replicas = r.Replicas()
	}
	r := reply{lines: []string{
		say("Config:    %s/%s", sh.scope, sh.name),
		say("Stream:    %s (%s)", sh.cfg.Log().Name(), Counted(replicas, "replica", "replicas")),
		say("Server:    %s", sh.server()),
		say("Revision:  %d local, %d in the stream (%d behind)", st.Revision, st.LastRevision, max(lag, 0)),
		say("History:   %s since the last compaction", Counted(st.EntriesSinceCompaction, "entry", "entries")),
		say("Compacts:  %s", describeCompaction(st.Compaction)),
		say("State:     %s, %s of keys and values", Counted(st.Properties, "property", "properties"), Counted(st.Bytes, "byte", "bytes")),
		say("Follow:    %s", yesNo(on)),
		say("Watch:     %s", watched),
		say("Trace:     %s", yesNo(sh.tracing.Load())),
		say("Process:   pid %d", os.Getpid()), // to name when stopping it: not go run's
	}}
	r.result = fields{
		"scope": sh.scope, "name": sh.name, "stream": sh.cfg.Log().Name(), "replicas": replicas, "server": sh.server(),
		"local_revision": st.Revision, "stream_revision": st.LastRevision, "lag": max(lag, 0),
		"entries_since_compaction": st.EntriesSinceCompaction, "properties": st.Properties, "bytes": st.Bytes,
		"compaction": fields{"removes": st.Compaction.Removes, "on_clear": st.Compaction.OnClear, "max_entries": st.Compaction.MaxEntries},
		"follow":     on, "watching": on, "watch_prefix": prefix, "trace": sh.tracing.Load(), "pid": os.Getpid(),
	}
	if gone := sh.cfg.StateGone(); gone != nil {
		// Nothing local to count: say so rather than show an empty state.
		r.lines[3] = say("Revision:  none local, %d in the stream", st.LastRevision)
		r.lines[6] = say("State:     unknown (purged by hand: see REFRESH)")
		for _, k := range []string{"local_revision", "lag", "properties", "bytes"} {
			delete(r.result, k)
		}
		r.result["state_unknown"] = true
	}
	return r
}

// describeCompaction says when this process compacts by itself (each
// process by its own policy).
func describeCompaction(p sharedconfig.CompactionPolicy) string {
	var rules []string
	if p.MaxEntries > 0 {
		rules = append(rules, fmt.Sprintf("at %s of history", Counted(p.MaxEntries, "entry", "entries")))
	}
	switch p.Removes {
	case 0:
	case 1:
		rules = append(rules, "after every REMOVE")
	default:
		rules = append(rules, fmt.Sprintf("after every %s REMOVE", ordinal(p.Removes)))
	}
	if p.OnClear {
		rules = append(rules, "after every CLEAR")
	}
	if len(rules) == 0 {
		return "only on COMPACT"
	}
	return strings.Join(rules, ", ")
}

// ordinal is n written as 2nd, 3rd, 5th, 11th, 21st.
func ordinal(n uint) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

func runCompact(ctx context.Context, sh *Shell, _ []string) reply {
	if err := sh.cfg.Compact(ctx); err != nil {
		return sh.failure(err)
	}
	rev := sh.cfg.State().Revision()
	return answer(say("Compacted: the snapshot at revision %d replaces the history before it", rev), fields{"snapshot_revision": rev})
}

func runFollow(_ context.Context, sh *Shell, args []string) reply {
	on := strings.EqualFold(args[0], "ON") // checked: ON or OFF
	if err := sh.setWatch(on, ""); err != nil {
		return sh.failure(err)
	}
	return answer(say("Follow is %s", yesNo(on)), fields{"follow": on})
}

// runWatch is WATCH [prefix]: the shell watches one prefix at a time, and
// WATCH alone (or with an empty prefix) is FOLLOW ON. "OFF" stops, so keys
// starting with OFF cannot be watched on their own.
func runWatch(_ context.Context, sh *Shell, args []string) reply {
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	if strings.EqualFold(prefix, "OFF") {
		if err := sh.setWatch(false, ""); err != nil {
			return sh.failure(err)
		}
		return answer(say("Watch is off"), fields{"watching": false})
	}
	if err := sh.setWatch(true, prefix); err != nil {
		return sh.failure(err)
	}
	rev, _ := sh.cfg.Revision() // with no state there too (a purge)
	f := fields{"watching": true, "prefix": prefix, "from_revision": rev}
	if prefix == "" {
		return answer(say("Watching every key from revision %d (FOLLOW ON)", rev), f)
	}
	return answer(say("Watching keys starting '%s' from revision %d", prefix, rev), f)
}

func runTrace(_ context.Context, sh *Shell, args []string) reply {
	on := strings.EqualFold(args[0], "ON") // checked: ON or OFF
	sh.tracing.Store(on)
	return answer(say("Trace is %s", yesNo(on)), fields{"trace": on})
}

func runHelp(_ context.Context, _ *Shell, args []string) reply {
	if len(args) == 1 && strings.TrimSpace(args[0]) != "" {
		name := strings.TrimSpace(args[0])
		if strings.ContainsAny(name, " \t") {
			return refuse("HELP takes one command at a time: '%s'", args[0])
		}
		c := lookup(name)
		if c == nil {
			return unknownCommand(name)
		}
		return answer(c.syntax()+" - "+c.help, fields{"commands": []fields{{"syntax": c.syntax(), "help": c.help}}})
	}
	list := []fields{}
	for _, c := range commands {
		list = append(list, fields{"syntax": c.syntax(), "help": c.help})
	}
	return reply{lines: strings.Split(helpText(), "\n"), result: fields{"commands": list}}
}

func runQuit(_ context.Context, _ *Shell, _ []string) reply {
	return reply{outcome: quitNow, lines: []string{say("Exiting...")}}
}
