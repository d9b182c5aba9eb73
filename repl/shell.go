// Package repl is the sharedconfig command shell: a line is parsed
// (parse.go), looked up in one command table whose parameters are stated
// once and drive the argument checks, HELP and completion (commands.go,
// params.go, complete.go), run against a shared config, and its reply
// rendered as text or JSON (reply.go). Everything printed that came from a
// user, a stream or a server is escaped there, in one place; the one-shot
// commands outside the shell print through Shown, PrintTable and WriteJSON
// for the same reason.
//
// Terminal and piped input go through the same loop (shell.go) behind the
// Input interface: a Script reads lines of bounded length (input.go); a
// Terminal keeps the terminal raw for the session, reads its keys itself
// and hands them to go-prompt one at a time (terminal.go, keys.go,
// console_*.go), so that a paste runs line by line, type-ahead waits, and
// Ctrl-C cancels the running command.
package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Input is where lines come from: a terminal or a script.
type Input interface {
	// ReadLine returns the next line without its line ending, or io.EOF.
	ReadLine() (string, error)
}

// aboveInput is an Input that can print lines above the line being typed
// without garbling it. PrintAbove returns false, and prints nothing, when no
// line is being read or w does not show where it is (answers redirected to
// a file): w is then written to as usual.
type aboveInput interface {
	PrintAbove(w io.Writer, lines []string) bool
}

// releasingInput is an Input that holds the terminal. Release gives it
// back once the last line is read, before the shell leaves, which may take
// a while (revoking leases): keys typed meanwhile then go to the user's
// shell, not to a reader about to end, and Ctrl-C is SIGINT again.
type releasingInput interface {
	Release()
}

// numberedInput is an Input that counts its lines: a script. Its failed
// lines are reported with their numbers.
type numberedInput interface {
	LineNumber() int
}

// Options configure a Shell.
type Options struct {
	// Scope and Name name the config, for GET_ALL and STATUS.
	Scope, Name string
	// Server describes the server in use, for STATUS.
	Server func() string
	// Out receives every answer.
	Out io.Writer
	// Err, in text mode, receives the lines of failed commands and the
	// warnings that arrive on their own, so that Out carries only answers;
	// nil means Out. With JSON everything goes to Out, one object a line.
	Err io.Writer
	// StopOnError ends a script at its first failed line, as sh -e does.
	StopOnError bool
	// MissingKeyFails makes a GET of an undefined key a failure, for a
	// one-shot get whose exit status answers whether the key is there.
	MissingKeyFails bool
	// Timeout bounds each command's I/O; 0 means 5s.
	Timeout time.Duration
	// JSON: one JSON object per command instead of text.
	JSON bool
	// Revisions: GET and GET_ALL show the revision that set each value.
	Revisions bool
	// Trace starts with TRACE ON.
	Trace bool
	// Abort, if set, closes the connection: the shell calls it when
	// leaving (KeepLeases's stop) takes ExitBudget, so that no request goes
	// on waiting for a server that does not answer.
	Abort func()
	// Advice, if set, says what a user can do about an error, as a clause
	// added to the line that reports it, or "".
	Advice func(error) string
}

// ExitBudget bounds the time a shell takes to leave (QUIT, the end of
// input, a signal), revoking what it can meanwhile: whatever the server
// does, the process ends soon after.
const ExitBudget = 1250 * time.Millisecond

// Shell runs commands against one shared config.
type Shell struct {
	cfg             *sharedconfig.Config
	scope, name     string
	server          func() string
	timeout         time.Duration
	json            bool
	revisions       bool
	failed          int
	stopOnError     bool
	missingKeyFails bool
	advice          func(error) string
	// position says where a failed line came from ("line", 3): set while
	// Run reads a script, or for one argument of exec.
	position func() (what string, n int)

	outMu sync.Mutex // one writer at a time: commands, traces, follow
	out   io.Writer
	err   io.Writer // text mode's failures and warnings
	above atomic.Pointer[aboveInput]

	tracing  atomic.Bool
	attempts []jsonTrace // JSON mode: the current command's tries
	// inCommand: a command is running, so the tries traced are its own;
	// between commands they are the lease keeper's.
	inCommand atomic.Bool
	// reading: Run reads commands, so QUIT and PUT are the user's to type
	// (not so under 'sharedconfig watch').
	reading atomic.Bool

	followMu    sync.Mutex
	stopFollow  func() // set while following: FOLLOW ON or WATCH
	watchPrefix string // WATCH's prefix; empty: every key

	cancelled atomic.Bool                     // Ctrl-C cancelled the command running
	runCtx    atomic.Pointer[context.Context] // Run's: once it is done (SIGINT, SIGTERM), lines under way were cancelled

	// followDown: following failed and has not worked since; downWatch
	// waits for the server to answer again.
	followDown atomic.Bool
	downWatch  sync.WaitGroup

	abort func()
}

// New returns a shell; Attach gives it its config. The two steps let the
// config's hooks (Attempt, CompactionFailed) point at the shell from the start.
func New(o Options) *Shell {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Server == nil {
		o.Server = func() string { return "" }
	}
	if o.Err == nil || o.JSON {
		o.Err = o.Out
	}
	if o.Abort == nil {
		o.Abort = func() {}
	}
	sh := &Shell{scope: o.Scope, name: o.Name, server: o.Server, out: o.Out, err: o.Err, timeout: o.Timeout, json: o.JSON, revisions: o.Revisions, stopOnError: o.StopOnError, missingKeyFails: o.MissingKeyFails, abort: o.Abort, advice: o.Advice}
	sh.tracing.Store(o.Trace)
	return sh
}

// Attach sets the config the shell works on.
func (sh *Shell) Attach(cfg *sharedconfig.Config) { sh.cfg = cfg }

// Close stops following or watching, if on.
func (sh *Shell) Close() {
	sh.setWatch(false, "")
	sh.downWatch.Wait()
}

// Failures is how many lines failed: could not be parsed or run, or ran into
// an error. A command that answers "no" ("was NOT replaced") did not fail.
func (sh *Shell) Failures() int { return sh.failed }

// PrintHelp prints the help text to w, as the interactive shell does on
// start on the terminal it prompts on.
func (sh *Shell) PrintHelp(w io.Writer) { sh.printTo(w, strings.Split(helpText(), "\n")) }

// Run executes lines from in until QUIT, the end of input, or ctx ends.
func (sh *Shell) Run(ctx context.Context, in Input) error {
	sh.reading.Store(true)
	defer sh.reading.Store(false)
	if a, ok := in.(aboveInput); ok {
		sh.above.Store(&a)
		defer sh.above.Store(nil)
	}
	if n, ok := in.(numberedInput); ok {
		sh.position = func() (string, int) { return "line", n.LineNumber() }
		defer func() { sh.position = nil }()
	}
	defer sh.KeepLeases()() // QUIT, Ctrl-D and the end of a script revoke
	if r, ok := in.(releasingInput); ok {
		defer r.Release() // before the revoke
	}
	sh.runCtx.Store(&ctx)
	keyboard, _ := in.(interruptible)
	execute := func(line string) outcome { return sh.executeInterruptible(ctx, keyboard, line) }
	if keyboard == nil {
		p, stop := newPipeline(sh)
		defer stop() // before the leases are revoked: every line is answered
		execute = func(line string) outcome { return p.execute(ctx, line) }
	}
	for {
		line, err := readLine(ctx, in)
		if keyboard != nil && (errors.Is(err, io.EOF) || errors.Is(err, ErrInterrupted)) {
			// Ctrl-D, or Ctrl-C twice: the goodbye QUIT says.
			sh.render("QUIT", runQuit(ctx, sh, nil))
			return nil
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		var tooLong *LineTooLongError
		if errors.As(err, &tooLong) {
			execute("") // in its place among the answers
			sh.render("", refuse("%s", tooLong.Error()))
			continue
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // stopped: a line read meanwhile does not start
		}
		switch execute(line) {
		case quitNow:
			return nil
		case failed:
			if sh.stopOnError && keyboard == nil {
				return nil
			}
		}
	}
}

// interruptible is an Input a person types at: Ctrl-C while a command runs
// cancels the command.
type interruptible interface {
	// OnInterrupt has cancel called on Ctrl-C until stop is called.
	OnInterrupt(cancel func()) (stop func())
}

// executeInterruptible runs a line; from a keyboard, Ctrl-C cancels it, and
// the shell carries on.
func (sh *Shell) executeInterruptible(ctx context.Context, keyboard interruptible, line string) outcome {
	if keyboard == nil {
		return sh.Execute(ctx, line)
	}
	lineCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sh.cancelled.Store(false)
	stop := keyboard.OnInterrupt(func() {
		sh.cancelled.Store(true)
		cancel()
	})
	defer stop()
	return sh.Execute(lineCtx, line)
}

// stoppedBy: err is what the end of a run that a signal (SIGINT, SIGTERM)
// ended left a command under way with, not a failure of its own: it was
// cancelled, or its append's outcome is unknown because of that.
func (sh *Shell) stoppedBy(err error) bool {
	ctx := sh.runCtx.Load()
	return ctx != nil && (*ctx).Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, statesync.ErrUnknownOutcome))
}

// describeCancel says what a command cancelled with Ctrl-C (or a script's
// line, by SIGINT or SIGTERM) left behind: a
// write whose append may have landed says so; any other error from a
// cancelled command means nothing was written.
func describeCancel(err error) string {
	if errors.Is(err, statesync.ErrUnknownOutcome) {
		return "Cancelled: the change may or may not have been made; REFRESH, then look"
	}
	return "Cancelled: nothing was changed"
}

// readLine reads one line, giving up when ctx ends. Reads cannot be
// interrupted, so a read abandoned that way finishes in the background.
func readLine(ctx context.Context, in Input) (string, error) {
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := in.ReadLine()
		done <- result{line, err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ExecuteArgument runs the nth argument of a command line as a shell line
// (exec's): a failure says which argument it was.
func (sh *Shell) ExecuteArgument(ctx context.Context, n int, text string) outcome {
	sh.position = func() (string, int) { return "argument", n }
	defer func() { sh.position = nil }()
	return sh.Execute(ctx, text)
}

// Execute runs one line. Blank lines and lines starting with '#' do nothing.
func (sh *Shell) Execute(ctx context.Context, text string) outcome {
	if strings.HasPrefix(strings.TrimSpace(text), "#") {
		return ok
	}
	if len(text) > MaxLineLength { // typed or pasted; a Script never returns one
		return sh.render("", refuse("%s", (&LineTooLongError{Length: int64(len(text))}).Error()))
	}
	line, err := Parse(text)
	if err != nil {
		return sh.render("", refuse("%s", err))
	}
	if line.Word == "" {
		return ok
	}
	c := lookup(line.Word)
	if c == nil {
		return sh.render(line.Word, unknownCommand(line.Word))
	}
	if r, bad := c.checkArgs(line.Args); bad {
		return sh.render(c.name, r)
	}
	cctx, cancel := context.WithTimeout(ctx, sh.timeout)
	defer cancel()
	sh.inCommand.Store(true)
	defer sh.inCommand.Store(false)
	return sh.render(c.name, c.run(cctx, sh, line.Args))
}

// render prints a reply to the line just read and returns its outcome.
func (sh *Shell) render(command string, r reply) outcome {
	what, n := sh.currentPosition()
	return sh.renderAt(command, r, what, n)
}

// currentPosition is where the line just read came from ("line", 3), or ""
// and 0 for a line typed or given alone.
func (sh *Shell) currentPosition() (what string, n int) {
	if sh.position == nil {
		return "", 0
	}
	return sh.position()
}

// renderAt prints a reply to the line at what n and returns its outcome.
func (sh *Shell) renderAt(command string, r reply, what string, n int) outcome {
	line, argument := 0, 0
	if r.outcome == failed {
		if !r.stopped {
			sh.failed++
		}
		if what != "" {
			if what == "line" {
				line = n
			} else {
				argument = n
			}
			r.lines[0] = strings.Replace(r.lines[0], "!!!! ", fmt.Sprintf("!!!! %s %d: ", what, n), 1)
		}
	}
	sh.outMu.Lock()
	defer sh.outMu.Unlock()
	if sh.json {
		jr := jsonReply{Command: command, OK: r.outcome != failed, Result: r.result, Error: r.err, Line: line, Argument: argument, Attempts: sh.attempts}
		if sh.cfg != nil {
			if rev, ok := sh.cfg.Revision(); ok {
				jr.Revision = &rev
			}
		}
		sh.attempts = nil
		writeJSON(sh.out, jr)
		return r.outcome
	}
	w := sh.out
	if r.outcome == failed {
		w = sh.err
	}
	for _, l := range r.lines {
		fmt.Fprintln(w, l)
	}
	if r.table != nil {
		if err := renderTable(sh.out, r.table); err != nil {
			fmt.Fprintln(sh.err, warn("Error: %v", err))
		}
	}
	return r.outcome
}

// StopsOnError says whether a script stops at its first failed line.
func (sh *Shell) StopsOnError() bool { return sh.stopOnError }

// print writes lines as they are.
func (sh *Shell) print(lines []string) { sh.printTo(sh.out, lines) }

func (sh *Shell) printTo(w io.Writer, lines []string) {
	sh.outMu.Lock()
	defer sh.outMu.Unlock()
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// printAsync prints lines that arrive on their own (follow mode): above the
// prompt when a line is being typed, else straight out.
func (sh *Shell) printAsync(lines []string) {
	if a := sh.above.Load(); a != nil && (*a).PrintAbove(sh.out, lines) {
		return
	}
	sh.print(lines)
}

// warnAsync prints a warning that arrives on its own, as printAsync does,
// but to the error stream when no line is being typed.
func (sh *Shell) warnAsync(line string) {
	if a := sh.above.Load(); a != nil && (*a).PrintAbove(sh.err, []string{line}) {
		return
	}
	sh.printTo(sh.err, []string{line})
}

// printJSONAsync prints v as one line of JSON, as printAsync prints lines.
func (sh *Shell) printJSONAsync(v any) {
	var b strings.Builder
	writeJSON(&b, v)
	sh.printAsync([]string{strings.TrimSuffix(b.String(), "\n")})
}

// Attempt is the config's trace hook: with TRACE ON it shows every try of a
// write as it happens.
func (sh *Shell) Attempt(a statesync.Attempt) {
	if !sh.tracing.Load() {
		return
	}
	background := !sh.inCommand.Load()
	if sh.json {
		t := jsonTrace{Attempt: a.N, Base: a.Base, Updates: a.Updates, Committed: a.Revision, HeldBackMS: float64(a.HeldBack.Microseconds()) / 1000}
		if a.Base == statesync.AnyRevision {
			t.Base, t.Unconditional = 0, true
		}
		t.Carried = a.Carried
		if a.Conflict != nil {
			t.Conflict, t.StreamAt, t.CaughtUp, t.Stopped = true, a.Conflict.Current, a.CaughtUp, a.Stopped
		}
		if background { // an event of its own, not a try of the next command
			sh.printJSONAsync(struct {
				Event string `json:"event"`
				jsonTrace
			}{"background_attempt", t})
			return
		}
		sh.outMu.Lock()
		sh.attempts = append(sh.attempts, t)
		sh.outMu.Unlock()
		return
	}
	if background { // above the line being typed, not into it
		sh.printAsync([]string{strings.Replace(describeAttempt(a), ".... ", ".... lease keeping, in the background: ", 1)})
		return
	}
	sh.print([]string{describeAttempt(a)})
}

func describeAttempt(a statesync.Attempt) string {
	if a.Base == statesync.AnyRevision {
		return fmt.Sprintf(".... try %d, unconditional (it decides nothing from the state it lands on): committed at revision %d", a.N, a.Revision)
	}
	prefix := fmt.Sprintf(".... try %d on revision %d: ", a.N, a.Base)
	if a.HeldBack > 0 {
		prefix = fmt.Sprintf(".... try %d on revision %d, after %s waiting for older writers' turns: ", a.N, a.Base, a.HeldBack.Round(time.Microsecond))
	}
	switch {
	case a.Carried:
		// Handed, maybe before any try of its own: no "try N".
		return fmt.Sprintf(".... handed on revision %d to the writer under way, whose entry at revision %d carries it (checked): done", a.Base, a.Revision)
	case a.Conflict != nil:
		at := "has moved on"
		if a.Conflict.Current != 0 {
			at = fmt.Sprintf("is at revision %d", a.Conflict.Current)
		}
		what := "conflict, the stream " + at
		if a.Updates == 0 {
			what = "nothing to write, but the stream " + at
		}
		if a.Stopped { // the catch-up failed or the time ran out: the next line says which
			return fmt.Sprintf("%s%s; caught up to revision %d, then stopped", prefix, what, a.CaughtUp)
		}
		return fmt.Sprintf("%s%s; caught up to revision %d, trying again", prefix, what, a.CaughtUp)
	case a.Updates == 0:
		return prefix + "nothing to write, and the stream is still at that revision: done"
	default:
		return fmt.Sprintf("%scommitted at revision %d", prefix, a.Revision)
	}
}

// CompactionFailed is the config's hook for a compaction that failed after
// a command: a warning, since nothing is lost, unless the compaction found
// the config destroyed (or purged).
func (sh *Shell) CompactionFailed(err error) {
	if sh.stoppedBy(err) {
		return // the shell is leaving: nothing to try again
	}
	// A compaction that found the config destroyed dropped the copy, as a
	// command would have: its state is lost, and nothing is tried again.
	if lost, ok := sh.describeLost(err); ok {
		if sh.json {
			sh.printJSONAsync(fields{"event": "error", "error": lost})
			return
		}
		sh.warnAsync(warn("%s", lost))
		return
	}
	if sh.json {
		sh.printJSONAsync(fields{"event": "compaction_failed", "error": sh.explain(err, sh.timeout)})
		return
	}
	sh.warnAsync(warn("Compaction failed (nothing is lost; it will be tried again): %s", sh.explain(err, sh.timeout)))
}

// Warn says something that went wrong without failing what the user asked
// (say, a snapshot that landed but whose history could not be dropped), as
// a warning line or, with JSON output, a "warning" event.
func (sh *Shell) Warn(msg string) {
	if sh.json {
		sh.printJSONAsync(fields{"event": "warning", "message": msg})
		return
	}
	sh.warnAsync(warn("%s", msg))
}

// heard is what the shell's watch (FOLLOW ON, or WATCH) calls with each
// change as it lands: it shows those others made, and the expiries this
// shell's keeper wrote (its user did not make them), but not what changes
// nothing anyone reads.
func (sh *Shell) heard(ch sharedconfig.Change, prefix string) {
	if quietChange(ch) {
		return
	}
	if !expiry(ch) {
		var any bool
		if ch, any = othersOf(ch); !any {
			return
		}
	}
	sh.showChange(ch, prefix)
}

// othersOf is ch narrowed to the operations others made, and whether it
// holds any. Under combining one entry may hold both: this shell's entry
// carrying PUTs other writers handed it, or another's carrying this
// shell's PUT (which the shell answered as its own).
func othersOf(ch sharedconfig.Change) (sharedconfig.Change, bool) {
	if len(ch.Ops) == 0 {
		return ch, !ch.Local
	}
	ops := make([]sharedconfig.Op, 0, len(ch.Ops))
	for _, op := range ch.Ops {
		if !op.Local {
			ops = append(ops, op)
		}
	}
	ch.Ops = ops
	return ch, len(ops) > 0
}

// showChange prints a change others made: a ">>>> " line, or a JSON event;
// prefix is the watch's, if it has one.
func (sh *Shell) showChange(ch sharedconfig.Change, prefix string) {
	if sh.json {
		f := changeFields(ch)
		f["event"] = "change"
		if prefix != "" {
			f["prefix"] = prefix
		}
		sh.printJSONAsync(f)
		return
	}
	if ch.Foreign != "" {
		sh.warnAsync(warn("Revision %d skipped: %s", ch.Revision, ch.Foreign))
		return
	}
	what := describeChangeLine(ch)
	if len(ch.Ended) > 0 {
		what += " -- " + describeEnded(ch.Ended)
	}
	if ch.Writer == "" {
		sh.printAsync([]string{">>>> " + safef("revision %d: %s", []any{ch.Revision, what})})
		return
	}
	sh.printAsync([]string{">>>> " + safef("revision %d by %s: %s", []any{ch.Revision, previewed(ch.Writer), what})})
}

// watching says what the shell shows of others' changes as they land:
// nothing, every change (FOLLOW ON, or WATCH alone), or those to keys under
// a prefix (WATCH prefix). Either way the local copy is kept current.
func (sh *Shell) watching() (on bool, prefix string) {
	sh.followMu.Lock()
	defer sh.followMu.Unlock()
	return sh.stopFollow != nil, sh.watchPrefix
}

// SetFollow turns follow mode on or off.
func (sh *Shell) SetFollow(on bool) error { return sh.setWatch(on, "") }

// SetWatch shows the changes others make to keys starting with prefix as
// they land (every change if prefix is empty), as WATCH does.
func (sh *Shell) SetWatch(prefix string) error { return sh.setWatch(true, prefix) }

// setWatch stops what the shell watches and, if on, watches prefix (the
// whole config if empty). One watch per shell: a new one replaces the last.
func (sh *Shell) setWatch(on bool, prefix string) error {
	sh.followMu.Lock()
	defer sh.followMu.Unlock()
	if on && sh.stopFollow != nil && sh.watchPrefix == prefix {
		return nil
	}
	if stop := sh.stopFollow; stop != nil {
		sh.stopFollow, sh.watchPrefix = nil, ""
		sh.followMu.Unlock()
		stop() // may wait for a fetch whose changes call watching()
		sh.followMu.Lock()
	}
	if !on {
		return nil
	}
	// The watch hears of changes only until stop returns, so heard need
	// not ask watching().
	stop, err := sh.cfg.Watch(prefix, func(ch sharedconfig.Change) { sh.heard(ch, prefix) }, sh.followFailed)
	if err != nil {
		return err
	}
	sh.stopFollow, sh.watchPrefix = stop, prefix
	return nil
}

// followFailed reports a catch-up that failed in follow mode: a warning,
// or with -o json an event, so that the output stays JSON.
// It says so once while the failures last (a fetch is tried every few
// seconds), and says again when the server answers.
func (sh *Shell) followFailed(err error) {
	lost, ok := sh.describeLost(err)
	if !ok {
		lost, ok = sh.describeDamage(err)
	}
	if ok {
		if sh.json {
			sh.printJSONAsync(fields{"event": "error", "error": lost})
			return
		}
		sh.warnAsync(warn("%s", lost))
		return
	}
	if !sh.followDown.CompareAndSwap(false, true) {
		return
	}
	msg := "Follow: " + sh.explain(err, 0) + "; changes will show when the server answers again"
	sh.downWatch.Add(1)
	go sh.waitForServer()
	if sh.json {
		sh.printJSONAsync(fields{"event": "error", "error": msg})
		return
	}
	sh.warnAsync(warn("%s", msg))
}

// serverPoll is how often a shell whose following failed asks the server
// whether it answers again.
const serverPoll = time.Second

// waitForServer asks the server for the stream's revision until it
// answers, then says so; or gives up when the shell stops following.
func (sh *Shell) waitForServer() {
	defer sh.downWatch.Done()
	tick := time.NewTicker(serverPoll)
	defer tick.Stop()
	for range tick.C {
		if on, _ := sh.watching(); !on {
			sh.followDown.Store(false)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), serverPoll)
		last, err := sh.cfg.Log().LastPosition(ctx)
		cancel()
		if err != nil {
			continue
		}
		rev := last.Revision
		sh.followDown.Store(false)
		if sh.json {
			sh.printJSONAsync(fields{"event": "follow_resumed", "stream_revision": rev})
			return
		}
		sh.printAsync([]string{say("Follow: the server answers again (the stream is at revision %d); changes show as they land", rev)})
		return
	}
}

// describeLost says, in one line, that the config was destroyed under the
// shell (and whether it stands again), or that its state is gone, if err
// says so.
func (sh *Shell) describeLost(err error) (string, bool) {
	if line, ok := DescribeGone(sh.name, err); ok {
		return line, true
	}
	var purged *statesync.PurgedError
	switch {
	case errors.As(err, &purged) && purged.Again != 0:
		return fmt.Sprintf("%s was purged by hand up to revision %d, and started again at %d: what it held is gone; reloaded", sh.name, purged.UpTo, purged.Again), true
	case errors.As(err, &purged):
		return fmt.Sprintf("%s was purged by hand up to revision %d: what it held is gone, and it is empty now", sh.name, purged.UpTo), true
	case errors.Is(err, statesync.ErrReplaced):
		return fmt.Sprintf("%s was destroyed and created again; reloaded", sh.name), true
	case errors.Is(err, statesync.ErrDeleted) && !sh.reading.Load():
		return fmt.Sprintf("%s was destroyed (by another process); its changes show again if it is created again", sh.name), true
	case errors.Is(err, statesync.ErrDeleted):
		return fmt.Sprintf("%s was destroyed (by another process); QUIT, or PUT to create it again", sh.name), true
	}
	return "", false
}

// describeDamage says, in one line, that following stopped at an entry that
// does not read, if err says so. The server answers; only a repair moves the
// copy on, so waiting for the server, and saying it answers again, would
// mislead.
func (sh *Shell) describeDamage(err error) (string, bool) {
	var entryErr *statesync.EntryError
	if !errors.As(err, &entryErr) {
		return "", false
	}
	rev, _ := sh.cfg.Revision()
	return fmt.Sprintf("Follow: %s/%s is damaged at entry %d (%v): the copy stays at revision %d, its last good state; "+
		"changes show again once 'sharedconfig repair' writes past it", sh.scope, sh.name, entryErr.Revision, entryErr.Err, rev), true
}

// DescribeGone says, in one line, that the state of config is gone and
// what to do, if err says so (statesync.ErrStateGone).
func DescribeGone(config string, err error) (string, bool) {
	var entryErr *statesync.EntryError
	if !errors.Is(err, statesync.ErrStateGone) || !errors.As(err, &entryErr) {
		return "", false
	}
	return fmt.Sprintf("%s was purged by hand up to revision %d, and entry %d, the first left, changes the state that went: "+
		"its state is unknown; writes fail until 'sharedconfig repair', which keeps what the entries left set",
		config, entryErr.Revision-1, entryErr.Revision), true
}

// explain is describeError with what the shell's Advice adds.
func (sh *Shell) explain(err error, timeout time.Duration) string {
	line := describeError(err, timeout)
	if sh.advice != nil {
		line += sh.advice(err)
	}
	return line
}

// DescribeError is err as one line of the shell says it, for a command
// given timeout: a write starved by other writers is not blamed on the
// server, nor an unknown outcome taken for a failure.
func DescribeError(err error, timeout time.Duration) string { return describeError(err, timeout) }

// describeError is an error as one line says it.
func describeError(err error, timeout time.Duration) string {
	if errors.Is(err, statesync.ErrNoAnswer) {
		return describeNoAnswer(err, timeout)
	}
	if contended := (*turns.ContendedError)(nil); errors.As(err, &contended) {
		lost := fmt.Sprintf("gave up after losing %d tries in a row to other writers", contended.Lost)
		switch contended.Lost {
		case 0:
			lost = fmt.Sprintf("gave up after holding back %v for older writers' turns", contended.HeldBack.Round(time.Millisecond))
		case 1:
			lost = "gave up after losing its one try to another writer"
		}
		if errors.Is(err, statesync.ErrUnknownOutcome) {
			// A PUT handed to another writer may land after its own
			// time ran out, holding back or losing.
			return fmt.Sprintf("%s, but the change may or may not have been made; REFRESH, then look (%v)", lost, err)
		}
		if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
			return fmt.Sprintf("%s within %s (the server is answering; try again, or use a longer --timeout)", lost, timeout)
		}
		return fmt.Sprintf("%s (%v)", lost, contended.Err)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && timeout > 0:
		return describeNoAnswer(err, timeout)
	case errors.Is(err, statesync.ErrUnknownOutcome):
		return fmt.Sprintf("the change may or may not have been made; REFRESH, then look (%v)", err)
	}
	return err.Error()
}

// describeNoAnswer says a command that got no answer from the server, read
// or write, in the same words: whatever it lost to other writers before,
// the server's silence is what stopped it.
func describeNoAnswer(err error, timeout time.Duration) string {
	within := ""
	if timeout > 0 {
		within = " within " + timeout.String()
	}
	if errors.Is(err, statesync.ErrUnknownOutcome) {
		return fmt.Sprintf("no answer from the server%s: the change may or may not have been made; REFRESH, then look (%v)", within, err)
	}
	return fmt.Sprintf("no answer from the server%s; is it running? (%v)", within, err)
}
