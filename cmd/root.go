// Package cmd is the sharedconfig command line, in cobra: the shell on one
// config (root.go), the one-shot commands that run one shell command and
// exit (oneshot.go), configs as things to list, export, import and destroy
// (configs.go), repair of a damaged config (repair.go), and the server and
// bench commands.
//
// Every command that opens a config takes the same flags (open.go):
// connection flags, then a NATS CLI context, then the environment
// (source.go); with none of them naming a server it uses the user's private
// local server, started in the background when none answers (conn.go). The
// original's single-dash options are rewritten before cobra sees them
// (args.go). What the commands print goes through package repl, so that it
// is escaped and shaped as the shell's answers are. Exit status: 0 ran, 1 a
// command or script line failed, 2 could not start.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sharedconfig/sharedconfig/repl"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailures = 1 // some lines of a script failed
	exitStartup  = 2 // bad flags, bad names, no server
)

// exitError carries an exit status through cobra.
type exitError struct {
	code int
	err  error // nil: already reported
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// Main runs the command line with args and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &checkedWriter{w: stdout, failed: cancel}
	code := run(ctx, args, stdin, out, stderr)
	if err := out.Err(); err != nil {
		fmt.Fprintf(stderr, "sharedconfig: writing standard output: %s\n", visible(err.Error()))
		return max(code, exitFailures)
	}
	return code
}

// stopSignals end a command cleanly (a shell revokes its leases, a watch
// says goodbye): Ctrl-C, SIGTERM, and the hang-up of a closed terminal,
// unless the process was started with it ignored (nohup), which asking
// for it would undo.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// checkedWriter is standard output, which can fail (a full disk, an I/O
// error; a broken pipe ends the process with SIGPIPE): the first error is
// kept for the exit status, and stops the command as a signal would, since
// nobody can see its answers.
type checkedWriter struct {
	w      io.Writer
	failed context.CancelFunc

	mu  sync.Mutex
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
			c.failed()
		}
		c.mu.Unlock()
	}
	return n, err
}

// Err is the first error writing, if any.
func (c *checkedWriter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// run runs the command line and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	args, err := normalizeArgs(root, args)
	if err != nil {
		fmt.Fprintf(stderr, "sharedconfig: %s\n", visible(err.Error()))
		return exitStartup
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err = root.ExecuteContext(ctx)
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(stderr, "sharedconfig: %s%s\n", visible(ee.err.Error()), advice(ee.err))
		}
		return ee.code
	default:
		// cobra's own errors: unknown flags, bad values. One line, as for
		// any bad input.
		fmt.Fprintf(stderr, "sharedconfig: %s%s; sharedconfig --help shows the usage\n", visible(err.Error()), flagHint(err))
		return exitStartup
	}
}

// flagHint is what to add to an unknown flag's error: an argument that
// starts with '-' (a negative number, say) is read as flags unless it
// follows "--".
func flagHint(err error) string {
	if strings.HasPrefix(err.Error(), "unknown shorthand flag") {
		return " (an argument that starts with '-' goes after --, which ends the flags: put k -- -1)"
	}
	return ""
}

// visible escapes, as Go would quote them, the characters of s that could
// drive a terminal or break the line (controls, format characters such as
// bidi overrides, bytes that are not UTF-8) and leaves the rest as it is.
// Errors carry what users and files gave (paths, URLs, context names,
// flags), and each is printed as one line.
func visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

type rootFlags struct {
	scope, name string
	file        string
	timeout     time.Duration
	output      string
	follow      bool
	noHistory   bool
	trace       bool
	combine     bool
	compaction  sharedconfig.CompactionPolicy
	revisions   bool
	stopOnError bool
	// missingKeyFails: a GET of an undefined key fails (the one-shot get).
	missingKeyFails bool
	interactive     bool // the shell reads a terminal
	shell           bool // the shell runs, not a one-shot command
	writer          string
	replicas        int
	mostlyReads     bool // a read-only command: join the writers' turns only if it writes
	// oneKey: the command reads this key alone (get KEY): the config may
	// open holding it alone (see openConfig).
	oneKey string
	// stream is the config's stream, when the command looked it up
	// before opening the config (openExisting).
	stream  natsjs.Stream
	noCache bool // --no-cache: read the whole config, keep no copy
	// cacheDir is the replica cache's directory; empty, the user's
	// (replicacache.Dir).
	cacheDir string
	conn     connFlags
	source   sourceFlags
}

func newRoot() *cobra.Command {
	var f rootFlags
	root := &cobra.Command{
		Use:   "sharedconfig",
		Short: "A key/value config shared by many processes, kept consistent on NATS JetStream",
		Long: `sharedconfig opens a shell on one shared config, named by a scope and a name.
Every process that opens the same scope and name shares its properties: each
change is appended to a JetStream stream only if the writer had the latest
state (optimistic concurrency), and each process replays the stream to keep
its own copy. Reads use that copy, so they may be stale until REFRESH.

With no --server, no NATS context that names a server, and no NATS_URL,
sharedconfig uses your own private server at 127.0.0.1:4222 (on --data-dir),
starting one in the background if none answers.

Input from a pipe or --file runs as a script: no banner or prompt, one answer
per command on stdout; a failed line says so on stderr (with -e the script
stops there). Exit status: 0 when every line ran, 1 when a line was unknown or
malformed or a command failed, 2 when the shell could not start.`,
		Example: `  sharedconfig                       # the config example/someConfig
  sharedconfig -s myScope -n myConfig
  echo 'PUT p1, v1' | sharedconfig   # a one-line script
  sharedconfig --server nats://127.0.0.1:4333  # a server of your own (see 'sharedconfig server --help')`,
		Version:       version(),
		Args:          noArgsButACommand,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runShell(cmd, f)
		},
	}
	f.register(root)
	root.Flags().StringVarP(&f.file, "file", "f", "", "run the commands in `FILE` as a script, then exit (- reads standard input)")
	root.Flags().BoolVar(&f.follow, "follow", false, "start with FOLLOW ON: show others' changes as they land, no REFRESH needed")
	root.Flags().BoolVar(&f.noHistory, "no-history", false, "keep no history file of the lines typed (by default $XDG_STATE_HOME/sharedconfig/history, 0600)")
	for _, c := range []*cobra.Command{newServerCmd(), newBenchCmd(), newDemoCmd()} {
		c.Args = sayUsage(c.Args)
		root.AddCommand(c)
	}
	addConfigCommands(root, &f)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	return root
}

// noArgsButACommand refuses arguments to the shell, as cobra.NoArgs does,
// with the command a mistyped one may have meant: "gett" is "get", "PUT"
// (the shell's word) is "put".
func noArgsButACommand(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 1 // one slip: two would offer get for PUT
		}
		if near := c.SuggestionsFor(args[0]); len(near) > 0 {
			return fmt.Errorf("unknown command %q for %q (did you mean %s?)", args[0], c.CommandPath(), strings.Join(near, " or "))
		}
	}
	return cobra.NoArgs(c, args)
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

func runShell(cmd *cobra.Command, f rootFlags) error {
	ctx := cmd.Context()
	if err := f.check(cmd); err != nil {
		return err
	}
	// Open the input first: a missing script file should not wait on a server.
	in, closeInput, err := scriptInput(cmd, f)
	if err != nil {
		return err
	}
	defer closeInput()
	interactive := in == nil
	f.interactive, f.shell = interactive, true
	sess, err := f.open(cmd)
	if err != nil {
		return err
	}
	defer sess.Close()
	defer sess.cutWhenSignalled(ctx)()
	sh := sess.sh
	if f.follow {
		if err := sh.SetFollow(true); err != nil {
			return &exitError{exitStartup, err}
		}
	}
	var display io.Writer
	if interactive {
		t, d, closeTerminal, err := f.terminal(cmd, sh)
		if err != nil {
			return &exitError{exitStartup, err}
		}
		defer closeTerminal()
		in, display = t, d
		sh.PrintHelp(display)
	}
	err = sh.Run(ctx, in)
	sess.leaving()
	switch {
	case errors.Is(err, context.Canceled):
		// SIGINT or SIGTERM: a clean exit, off the prompt's line. (Ctrl-C
		// in the terminal is a key, not a signal: see repl.Terminal.)
		if interactive {
			fmt.Fprintln(display)
		}
	case err != nil:
		return &exitError{exitFailures, fmt.Errorf("reading input: %w", err)}
	}
	if sh.Failures() > 0 && !interactive {
		return &exitError{code: exitFailures}
	}
	return nil
}

// terminal reads the terminal the shell runs on: with go-prompt, unless
// the terminal cannot be drawn on. It prompts on display.
func (f *rootFlags) terminal(cmd *cobra.Command, sh *repl.Shell) (in repl.Input, display io.Writer, closeTerminal func(), err error) {
	display, closeDisplay := openDisplay(cmd)
	if repl.IsDumbTerminal() {
		return repl.NewPlainTerminal(cmd.InOrStdin(), display, f.promptPrefix()), display, closeDisplay, nil
	}
	t, err := repl.NewTerminal(repl.TerminalOptions{Prefix: f.promptPrefix(), Complete: sh.Complete, History: f.history(), Display: display})
	if err != nil {
		closeDisplay()
		return nil, nil, nil, err
	}
	// Answers piped to a reader that has left ("sharedconfig | head -1")
	// must end the shell as any output that cannot be written does, not
	// by SIGPIPE, which would leave the terminal raw and the leases held.
	// With SIGPIPE asked for, the write fails with EPIPE instead.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return t, display, func() { t.Close(); closeDisplay() }, nil
}

// openDisplay is the terminal the shell prompts on, and echoes what is
// typed on: stdout, unless the answers are redirected (sharedconfig >
// out.txt), which must then get the answers alone; else stderr, as python
// prompts, if that is the terminal; else the terminal itself (2>&1 too).
// Lines that go to the writer it returns go above the line being typed.
func openDisplay(cmd *cobra.Command) (io.Writer, func()) {
	switch out, errs := cmd.OutOrStdout(), cmd.ErrOrStderr(); {
	case writesToTerminal(out):
		return out, func() {}
	case isTerminal(errs):
		return errs, func() {}
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return cmd.ErrOrStderr(), func() {}
	}
	return tty, func() { tty.Close() }
}

// scriptInput opens the script the shell runs: --file, or stdin when it is
// not a terminal. On a terminal it returns no Input: the shell is
// interactive.
func scriptInput(cmd *cobra.Command, f rootFlags) (repl.Input, func(), error) {
	switch {
	case f.file == "-":
		return repl.NewScript(cmd.InOrStdin()), func() {}, nil
	case f.file != "":
		file, err := os.Open(f.file)
		if err != nil {
			return nil, nil, &exitError{exitStartup, err}
		}
		if info, err := file.Stat(); err == nil && info.IsDir() {
			file.Close()
			return nil, nil, &exitError{exitStartup, fmt.Errorf("%s is a directory, not a script", f.file)}
		}
		return repl.NewScript(file), func() { file.Close() }, nil
	case isTerminal(cmd.InOrStdin()):
		return nil, func() {}, nil
	}
	return repl.NewScript(cmd.InOrStdin()), func() {}, nil
}

// promptPrefix is the shell's prompt: the config's name, with its scope
// when that is not the default, so that a shell on another scope says so.
func (f *rootFlags) promptPrefix() string {
	if f.scope == defaultScope {
		return f.name + " > "
	}
	return f.scope + "/" + f.name + " > "
}

// historyLines is how many lines the history file keeps.
const historyLines = 1000

// history is the shell's history file, $XDG_STATE_HOME/sharedconfig/history
// (~/.local/state/...), or nil with --no-history or no home to put it in.
func (f *rootFlags) history() *repl.History {
	if f.noHistory {
		return nil
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return repl.OpenHistory(filepath.Join(dir, "sharedconfig", "history"), historyLines)
}

// catchUpProgress shows a catch-up that takes more than a second, on a
// terminal's stderr, and clears the line when it ends.
func catchUpProgress(w io.Writer) func(done, total uint64) {
	if !isTerminal(w) {
		return nil
	}
	var start time.Time
	shown := false
	return func(done, total uint64) {
		switch {
		case done < total && start.IsZero():
			start = time.Now()
		case done >= total:
			if shown {
				fmt.Fprint(w, "\r\x1b[K")
			}
			start, shown = time.Time{}, false
		case time.Since(start) > time.Second:
			fmt.Fprintf(w, "\r\x1b[Kcatching up: %d of %d entries (%d%%)", done, total, done*100/total)
			shown = true
		}
	}
}

// defaultWriter names this process: user@host:pid. Worked out once: every
// command registers the flag, and the user may be looked up in the password
// database.
var defaultWriter = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "someone"
	}
	return fmt.Sprintf("%s@%s:%d", name, host, os.Getpid())
})

func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
