// Package cmd is the sharedconfig command line: cobra wiring around the
// REPL, the server, and connecting to NATS.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sharedconfig/sharedconfig/jetstream"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(stderr, "sharedconfig: %v\n", ee.err)
		}
		return ee.code
	default:
		// cobra's own errors: unknown flags, bad values.
		fmt.Fprintf(stderr, "sharedconfig: %v\n", err)
		fmt.Fprintln(stderr, "Run 'sharedconfig --help' for usage.")
		return exitStartup
	}
}

type rootFlags struct {
	scope, name string
	file        string
	timeout     time.Duration
	output      string
	follow      bool
	trace       bool
	revisions   bool
	writer      string
	replicas    int
	conn        connFlags
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

With no --server and no NATS_URL, sharedconfig uses the server at
127.0.0.1:4222, starting one in the background if none answers.

Input from a pipe or --file runs as a script: no banner or prompt, one answer
per command. Exit status: 0 when every line ran, 1 when a line was unknown or
malformed or a command failed, 2 when the shell could not start.`,
		Example: `  sharedconfig                       # the config example/someConfig
  sharedconfig -s myScope -n myConfig
  echo 'PUT p1, v1' | sharedconfig   # a one-line script
  sharedconfig server --listen 127.0.0.1:4222 --data-dir ./data`,
		Version:       version(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runShell(cmd, f)
		},
	}
	fl := root.Flags()
	fl.StringVarP(&f.scope, "scope", "s", "example", "the config's scope")
	fl.StringVarP(&f.name, "name", "n", "someConfig", "the config's name")
	fl.StringVarP(&f.file, "file", "f", "", "run the commands in `FILE` as a script, then exit")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Second, "how long one command may wait for the server")
	fl.StringVarP(&f.output, "output", "o", "text", "answers as `text` or json (one JSON object per command)")
	fl.BoolVar(&f.follow, "follow", false, "start with FOLLOW ON: show others' changes as they land, no REFRESH needed")
	fl.BoolVar(&f.trace, "trace", false, "start with TRACE ON: show every try of every write")
	fl.BoolVar(&f.revisions, "revisions", false, "GET and GET_ALL show the revision that set each value")
	fl.IntVar(&f.replicas, "replicas", 0, "replicas of a config's stream when this creates it (default: 1 on a standalone server, 3 on a cluster)")
	fl.StringVar(&f.writer, "writer", defaultWriter(), "the `NAME` others see on this process's changes (LOG, follow mode)")
	f.conn.register(root)
	root.AddCommand(newServerCmd(), newBenchCmd())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	return root
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

func runShell(cmd *cobra.Command, f rootFlags) error {
	ctx := cmd.Context()
	for _, n := range []struct{ kind, value string }{{"scope", f.scope}, {"name", f.name}} {
		if err := jetstream.ValidateName(n.kind, n.value); err != nil {
			return &exitError{exitStartup, err}
		}
	}
	if f.output != "text" && f.output != "json" {
		return &exitError{exitStartup, fmt.Errorf("--output %q: use text or json", f.output)}
	}
	// Open the input first: a missing script file should not wait on a server.
	var in repl.Input
	interactive := false
	switch {
	case f.file != "":
		file, err := os.Open(f.file)
		if err != nil {
			return &exitError{exitStartup, err}
		}
		defer file.Close()
		in = repl.NewScript(file)
	case isTerminal(cmd.InOrStdin()):
		interactive = true
	default:
		in = repl.NewScript(cmd.InOrStdin())
	}

	nc, err := f.conn.connect(ctx)
	if err != nil {
		return &exitError{exitStartup, err}
	}
	defer nc.Close()
	openCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	replicas := f.replicas
	if replicas == 0 {
		replicas = 1
		if nc.ConnectedClusterName() != "" {
			replicas = min(3, len(nc.Servers()))
		}
	}
	log, err := jetstream.OpenLog(openCtx, nc, f.scope, f.name, jetstream.LogOptions{Writer: f.writer, Replicas: replicas})
	if err != nil {
		return &exitError{exitStartup, err}
	}
	out := cmd.OutOrStdout()
	sh := repl.New(repl.Options{
		Scope: f.scope, Name: f.name, Out: out, Timeout: f.timeout,
		Server:    nc.ConnectedUrlRedacted,
		JSON:      f.output == "json",
		Trace:     f.trace,
		Revisions: f.revisions,
	})
	defer sh.Close()
	cfg, err := sharedconfig.Open(openCtx, log, sharedconfig.Options{
		Compaction:       sharedconfig.DefaultCompactionPolicy,
		CompactionFailed: sh.CompactionFailed,
		Trace:            sh.Attempt,
		Changed:          sh.Changed,
		CatchingUp:       catchUpProgress(cmd.ErrOrStderr()),
	})
	if err != nil {
		return &exitError{exitStartup, fmt.Errorf("opening %s/%s: %w", f.scope, f.name, err)}
	}
	sh.Attach(cfg)
	if f.follow {
		if err := sh.SetFollow(true); err != nil {
			return &exitError{exitStartup, err}
		}
	}
	if interactive {
		t, err := repl.NewTerminal(f.name+" > ", sh.Complete)
		if err != nil {
			return &exitError{exitStartup, err}
		}
		defer t.Close()
		in = t
		sh.PrintHelp()
	}
	err = sh.Run(ctx, in)
	switch {
	case errors.Is(err, context.Canceled):
		// SIGINT or SIGTERM: a clean exit, off the prompt's line. (Ctrl-C
		// in the terminal is a key, not a signal: see repl.Terminal.)
		if interactive {
			fmt.Fprintln(out)
		}
	case err != nil:
		return &exitError{exitFailures, fmt.Errorf("reading input: %w", err)}
	}
	if sh.Failures() > 0 && !interactive {
		return &exitError{code: exitFailures}
	}
	return nil
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

// defaultWriter names this process: user@host:pid.
func defaultWriter() string {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = "someone"
	}
	return fmt.Sprintf("%s@%s:%d", user, host, os.Getpid())
}

func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
