package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/repl"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// defaultScope is the scope of a config named without one.
const defaultScope = "example"

// register adds the flags every command that opens a config shares: the
// shell and each one-shot command take the same ones.
func (f *rootFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.scope, "scope", "s", defaultScope, "the config's scope")
	fl.StringVarP(&f.name, "name", "n", "someConfig", "the config's name")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Second, "how long one command may wait for the server")
	fl.StringVarP(&f.output, "output", "o", "text", "answers as `text` or json (one JSON object per command)")
	fl.BoolVar(&f.trace, "trace", false, "start with TRACE ON: show every try of every write")
	fl.BoolVar(&f.combine, "combine", true, "under contention, hand PUTs to the writer under way, which commits them in its own entries, and commit those handed to this process (see docs/consistency.md, Combining; --combine=false: neither)")
	fl.BoolVar(&f.revisions, "revisions", false, "GET and GET_ALL show the revision that set each value")
	fl.BoolVarP(&f.stopOnError, "stop-on-error", "e", false, "a script stops at its first failed line, exit status 1 (as sh -e)")
	fl.IntVar(&f.replicas, "replicas", 0, "replicas of a config's stream when this creates it (default: 1 on a standalone server, 3 on a cluster)")
	fl.StringVar(&f.writer, "writer", defaultWriter(), "the `NAME` others see on this process's changes (LOG, follow mode)")
	policy := sharedconfig.DefaultCompaction()
	fl.UintVar(&f.compaction.Removes, "compact-removes", policy.Removes, "compact after every `N`th REMOVE by this process, as the original does (0: never; see docs/consistency.md, Compaction policy)")
	fl.BoolVar(&f.compaction.OnClear, "compact-on-clear", policy.OnClear, "compact after every CLEAR by this process, as the original does")
	fl.Uint64Var(&f.compaction.MaxEntries, "compact-entries", policy.MaxEntries, "compact when the history since the last snapshot reaches `N` entries (0: never)")
	fl.BoolVar(&f.noCache, "no-cache", false, "read the whole config from the server and keep no copy in the user's cache directory (also "+noCacheEnv+"=1)")
	f.conn.register(cmd)
	f.source.register(cmd)
}

// check refuses bad flag values before any I/O, with exit status 2.
func (f *rootFlags) check(cmd *cobra.Command) error {
	for _, n := range []struct{ kind, value string }{{"scope", f.scope}, {"name", f.name}} {
		if err := jetstream.ValidateName(n.kind, n.value); err != nil {
			if n.kind == "scope" && (strings.Contains(n.value, ":") || strings.Contains(n.value, "//")) {
				// -s is the server in the nats CLI.
				err = fmt.Errorf("%w; did you mean --server? (-s is the scope here)", err)
			}
			return &exitError{exitStartup, err}
		}
	}
	if err := jetstream.ValidateWriter(f.writer); err != nil {
		if !cmd.Flags().Changed("writer") { // from $USER and the host name
			return &exitError{exitStartup, fmt.Errorf("the default --writer, user@host:pid: %w: give --writer", err)}
		}
		return &exitError{exitStartup, fmt.Errorf("--writer: %w", err)}
	}
	if f.output != "text" && f.output != "json" {
		return &exitError{exitStartup, fmt.Errorf("--output %q: use text or json", f.output)}
	}
	if f.timeout <= 0 {
		return &exitError{exitStartup, fmt.Errorf("--timeout %s: give a duration above zero, such as 5s", f.timeout)}
	}
	if cmd.Flags().Changed("replicas") && f.replicas < 1 {
		return &exitError{exitStartup, fmt.Errorf("--replicas %d: a stream has at least 1 replica", f.replicas)}
	}
	return nil
}

// session is one config, open: the connection, the shell that answers
// commands on it, and the config.
type session struct {
	nc  *nats.Conn
	log *jetstream.Log
	sh  *repl.Shell
	cfg *sharedconfig.Config
	// damaged, if set, is why the config opened read-only at its last
	// good state.
	damaged *sharedconfig.DamagedError
	replica *replica // the config's file in the replica cache; nil if off
	// due is when the session's last command must be over: the start of
	// its open or of its last command, plus --timeout; once a shell or a
	// watch leaves, ExitBudget from then. Saving the cache's copy at the
	// end must not take the process past it.
	due time.Time
	// trustPath is the file of what the writer learned of others' turns
	// words (replicacache.Trust); empty when the cache is off.
	trustPath string
	// stopped is closed by a signal (the command's context ends): the
	// save at the end then takes repl.ExitBudget more at most, whatever
	// due says.
	stopped <-chan struct{}
}

// Close stops following, closes the config and its log, and closes the
// connection.
func (s *session) Close() {
	s.sh.Close()
	if s.cfg != nil {
		if s.damaged == nil {
			s.replica.noteDirectGets(s.log)
			s.replica.save(s.cfg, s.due, s.stopped)
		}
		s.saveTrust()
		s.cfg.Close()
	}
	s.log.Close()
	s.nc.Close()
}

// revision is the revision the session's copy of the config stands at,
// or nil when it stands nowhere (or there is no session).
func (s *session) revision() *uint64 {
	if s == nil || s.cfg == nil {
		return nil
	}
	if rev, ok := s.cfg.Revision(); ok {
		return &rev
	}
	return nil
}

// stateGone is why the session's config holds no state to read (its
// state is gone), or nil.
func (s *session) stateGone() error {
	if s == nil || s.damaged == nil || !s.damaged.StateGone() {
		return nil
	}
	return s.damaged
}

// starts marks the start of a command that may take timeout, such as a
// shell line (the shell gives each --timeout).
func (s *session) starts(timeout time.Duration) { s.due = time.Now().Add(timeout) }

// command marks the start of a command that may take timeout, and returns
// its context.
func (s *session) command(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	s.starts(timeout)
	return context.WithTimeout(ctx, timeout)
}

// leaving marks the start of a shell's or a watch's leaving, which takes
// repl.ExitBudget at most.
func (s *session) leaving() { s.due = time.Now().Add(repl.ExitBudget) }

// cutWhenSignalled closes the connection repl.ExitBudget after ctx ends (a
// signal), unless stop comes first: whatever the process then waits for,
// a command, the lock a hung request holds, a revocation, fails at once,
// so that a signalled process ends soon whatever the server does.
func (s *session) cutWhenSignalled(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		timer := time.NewTimer(repl.ExitBudget)
		defer timer.Stop()
		select {
		case <-timer.C:
			s.nc.Close()
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// minConnectTimeout is the least time a connection is given, whatever
// --timeout says: a command's budget is for its requests, and a short one
// must not turn a slow handshake into a failure to connect.
const minConnectTimeout = time.Second

// dial connects as the flags, the NATS context and the environment say,
// and describes how for STATUS.
func (f *rootFlags) dial(ctx context.Context) (*nats.Conn, string, error) {
	conn := f.conn // f keeps the flags as given
	via, err := f.source.apply(&conn.opts)
	if err != nil {
		return nil, "", &exitError{exitStartup, err}
	}
	if conn.opts.Timeout == 0 {
		// A server that takes the connection and then says nothing (one
		// stopped with SIGSTOP) is waited for as long as a command would
		// wait for it, not nats.go's default.
		conn.opts.Timeout = max(f.timeout, minConnectTimeout)
	}
	nc, err := connectUntil(ctx, func() (*nats.Conn, error) { return conn.connect(ctx) })
	if err != nil {
		return nil, "", &exitError{exitStartup, err}
	}
	return nc, via, nil
}

// connectUntil is connect, given up when ctx ends (Ctrl-C, SIGTERM): nats.go
// connects with no context, and waits for a server that took the
// connection and says nothing (one stopped with SIGSTOP) as long as its
// timeout, --timeout. A connection that comes after is closed.
func connectUntil(ctx context.Context, connect func() (*nats.Conn, error)) (*nats.Conn, error) {
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := connect()
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		return r.nc, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("stopped while connecting to the server (%w)", ctx.Err())
	}
}

// open connects and opens the config the flags name. Errors are exitErrors
// with status 2: the command could not start.
func (f *rootFlags) open(cmd *cobra.Command) (*session, error) {
	nc, via, err := f.dial(cmd.Context())
	if err != nil {
		return nil, err
	}
	return f.openOn(cmd, nc, via)
}

// openOn is open on a connection made by dial, which the session then owns:
// it is closed with the session, or at once if the config does not open.
func (f *rootFlags) openOn(cmd *cobra.Command, nc *nats.Conn, via string) (*session, error) {
	due := time.Now().Add(f.timeout)
	openCtx, cancel := context.WithDeadline(cmd.Context(), due)
	defer cancel()
	var opened atomic.Bool
	var shell atomic.Pointer[repl.Shell] // set before the first write
	log, err := jetstream.OpenLog(openCtx, nc, f.scope, f.name, f.logOptions(cmd, nc, &opened, &shell))
	if err != nil {
		nc.Close()
		return nil, &exitError{exitStartup, err}
	}
	server := func() string { return shownURL(nc) }
	if via != "" {
		server = func() string { return shownURL(nc) + " (" + via + ")" }
	}
	sh := repl.New(repl.Options{
		Scope: f.scope, Name: f.name, Out: cmd.OutOrStdout(), Err: f.errorStream(cmd), Timeout: f.timeout,
		StopOnError:     f.stopOnError,
		MissingKeyFails: f.missingKeyFails,
		Server:          server,
		JSON:            f.output == "json",
		Trace:           f.trace,
		Revisions:       f.revisions,
		Abort:           nc.Close,
		Advice:          advice,
	})
	shell.Store(sh)
	s := &session{nc: nc, log: log, sh: sh, due: due, stopped: cmd.Context().Done()}
	s.cfg, err = f.openConfig(openCtx, s, sharedconfig.Options{
		CompactionPolicy: &f.compaction,
		CompactionFailed: sh.CompactionFailed,
		Trace:            sh.Attempt,
		CatchingUp:       catchUpProgress(cmd.ErrOrStderr()),
		Holder:           f.writer,
		MostlyReads:      f.mostlyReads,
		TurnsTrust:       s.loadTrust(f),
		Combining:        f.combine,
	})
	var damaged *sharedconfig.DamagedError
	if errors.As(err, &damaged) && s.cfg != nil {
		s.damaged = damaged
	} else if err != nil {
		s.Close()
		return nil, &exitError{exitStartup, fmt.Errorf("opening %s/%s: %w", f.scope, f.name, err)}
	}
	f.sayOpened(cmd, s)
	opened.Store(true)
	sh.Attach(s.cfg)
	return s, nil
}

// sayOpened says on stderr what opening the config found wrong with it. A
// damaged one is readable up to the damage: it opens read-only there. With
// its state gone there is nothing to read: a shell says so here, a command
// when it fails (openExistingOn, or its write). A purge met at open (a
// copy in the cache from before it, or a config that holds nothing since)
// is said here; later ones by the command that meets them.
func (f *rootFlags) sayOpened(cmd *cobra.Command, s *session) {
	stderr := cmd.ErrOrStderr()
	if damaged := s.damaged; damaged != nil {
		if line, gone := repl.DescribeGone(f.scope+"/"+f.name, damaged); !gone {
			fmt.Fprintf(stderr, "!!!! %s/%s is damaged at entry %d (%s): read-only at revision %d, its last good state; writes fail until 'sharedconfig repair'\n",
				f.scope, f.name, damaged.Entry.Revision, repl.Shown(damaged.Entry.Err.Error()), damaged.GoodRevision)
		} else if f.shell {
			fmt.Fprintln(stderr, "!!!! "+repl.Shown(line))
		}
		return
	}
	if n := s.cfg.Purged(); n > 0 {
		fmt.Fprintf(stderr, "!!!! %s/%s was purged by hand up to revision %d (its entries removed, with no snapshot in their place): what it held before is gone\n", f.scope, f.name, n)
	}
}

// logOptions are the options of the log openOn opens. A shell opened
// during a leader election says why it waits (until opened); later commands
// just take longer, within their own --timeout. The log's warnings go to
// the shell, once there is one.
func (f *rootFlags) logOptions(cmd *cobra.Command, nc *nats.Conn, opened *atomic.Bool, shell *atomic.Pointer[repl.Shell]) jetstream.LogOptions {
	return jetstream.LogOptions{
		Writer: f.writer, Replicas: f.replicasFor(nc), Stream: f.stream,
		Waiting: func(reason string) {
			if !opened.Load() {
				fmt.Fprintf(cmd.ErrOrStderr(), "sharedconfig: %s; trying for up to %s\n", visible(reason), f.timeout)
			}
		},
		Warning: func(msg string) {
			if sh := shell.Load(); sh != nil {
				sh.Warn(msg)
			}
		},
	}
}

// openConfig opens the config in s's log: for a one-shot get of one key
// (f.oneKey), holding that key alone, from the replica cache's index when
// it can (nothing is saved then: the copy is not whole); otherwise from the
// cache's whole copy, or from the log.
func (f *rootFlags) openConfig(ctx context.Context, s *session, o sharedconfig.Options) (*sharedconfig.Config, error) {
	s.replica = f.replicaFor(s.nc, s.log)
	if f.oneKey != "" && s.replica != nil {
		if cfg := s.replica.openOneKey(ctx, s.log, f.oneKey, o); cfg != nil {
			s.replica = nil
			return cfg, nil
		}
	}
	o.Resume = s.replica.load(s.log)
	return sharedconfig.Open(ctx, s.log, o)
}

// errorStream is where a shell's failures and warnings go: stderr, so that
// stdout carries only answers; at a terminal that shows the answers, the
// shell's own output, which keeps them in order with the prompt.
func (f *rootFlags) errorStream(cmd *cobra.Command) io.Writer {
	if f.interactive && writesToTerminal(cmd.OutOrStdout()) {
		return nil
	}
	return cmd.ErrOrStderr()
}

// replicasFor is --replicas, or by default 1 on a standalone server and up
// to 3 on a cluster.
func (f *rootFlags) replicasFor(nc *nats.Conn) int {
	if f.replicas != 0 {
		return f.replicas
	}
	if nc.ConnectedClusterName() != "" {
		return min(3, len(nc.Servers()))
	}
	return 1
}
