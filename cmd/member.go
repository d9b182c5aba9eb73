package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/repl"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// member is a one-shot way to hold a lease from a script or a service's
// start-up, as "etcdctl lease keep-alive" and zkCli's "create -e" give: the
// key lives while the command runs.

func newMemberCmd(f *rootFlags) *cobra.Command {
	var ttl time.Duration
	c := &cobra.Command{
		Use:   "member KEY VALUE",
		Short: "Hold KEY = VALUE under a lease of its own while this runs; revoke it at the end",
		Long: `Register a lease named KEY, put KEY = VALUE under it, and keep the lease
alive until Ctrl-C, SIGTERM, SIGHUP or the end of standard input (when that
is a pipe or a terminal); then revoke it, removing KEY. If the lease is lost
meanwhile (it expired while the server could not be reached, or another
writer changed or removed KEY), say so and exit at once.

Exit status: 0 when the lease was held throughout and revoked at the end,
1 when it could not be taken or was lost, 2 when the command could not start.`,
		Example: `  sharedconfig -s prod member /servers/1 '{"address":"10.0.0.1"}' --ttl 10s &
  sharedconfig -s prod get-all /servers/`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return memberCommandFunc(cmd, f, args[0], args[1], ttl)
		},
	}
	c.Flags().DurationVar(&ttl, "ttl", 10*time.Second, "the lease's ttl: how long KEY outlives this process if it is killed")
	return c
}

func memberCommandFunc(cmd *cobra.Command, f *rootFlags, key, value string, ttl time.Duration) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	if _, err := lease.ParseTTL(ttl.String()); err != nil {
		return &exitError{exitStartup, fmt.Errorf("--ttl %s: %w", ttl, err)}
	}
	s, err := f.open(cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := cmd.Context()
	defer s.cutWhenSignalled(ctx)()
	for _, l := range []string{shellLine("REGISTER_LEASE", key, ttl.String()), shellLine("PUT_WITH_LEASE", key, value, key)} {
		s.starts(f.timeout)
		s.sh.Execute(ctx, l)
		if s.sh.Failures() > 0 {
			revokeMember(s, key)
			return &exitError{code: exitFailures}
		}
	}
	stopKeeper := s.cfg.Leases().Keep(func(msg string) { memberWarning(cmd, f, msg) })
	lost := holdUntilEnd(ctx, cmd.InOrStdin(), s.cfg, f.scope+"/"+f.name, key, value, ttl)
	// Leaving takes ExitBudget at most, whatever the server does (the end
	// of input is no signal): then the connection is cut, and the lease is
	// left to expire.
	s.leaving()
	abort := time.AfterFunc(repl.ExitBudget, s.nc.Close)
	defer abort.Stop()
	stopKeeper()
	if lost != "" {
		memberWarning(cmd, f, fmt.Sprintf("Lease '%s' lost: %s", repl.Shown(key), lost))
		revokeMember(s, key)
		return &exitError{code: exitFailures}
	}
	if !leaveMember(ctx, s.cfg, func(msg string) { memberWarning(cmd, f, msg) }) {
		return &exitError{code: exitFailures}
	}
	return nil
}

// leaveMember revokes the member's lease as a quitting shell does
// (Leases.RevokeHeld), and says what is news: a lease that expired while
// its revocation waited for its turn ended as it was meant to, while one
// that had ended before, or that another process of the writer registered
// again, is news. It reports whether the lease was held to the end and
// ended. A signal that ended ctx does not cut it short: the caller bounds
// the leave.
func leaveMember(ctx context.Context, cfg *sharedconfig.Config, warn func(string)) bool {
	lost, err := cfg.Leases().RevokeHeld(context.WithoutCancel(ctx))
	for _, l := range lost {
		warn(l.String())
	}
	if err != nil {
		warn(fmt.Sprintf("Could not revoke the lease (it expires by itself): %v", err))
	}
	return err == nil && len(lost) == 0
}

// holdUntilEnd waits for the end (a signal, or the end of input) and
// returns "", or says how the lease was lost if it was.
func holdUntilEnd(ctx context.Context, stdin io.Reader, cfg *sharedconfig.Config, config, key, value string, ttl time.Duration) (lost string) {
	inputEnded := make(chan struct{})
	if watchesInput(stdin) {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			close(inputEnded)
		}()
	}
	tick := time.NewTicker(min(ttl/3, time.Second))
	defer tick.Stop()
	// The keeper can take in a config destroyed and created again before
	// this loop's fetch does (its write finds the new stream and loads it),
	// and the fetch then finds nothing to say: a revision lower than one
	// already read says it instead.
	highest := cfg.State().Revision()
	for {
		select {
		case <-ctx.Done():
			return stillHeld(cfg, key, value)
		case <-inputEnded:
			return stillHeld(cfg, key, value)
		case <-tick.C:
		}
		refreshCtx, cancel := context.WithTimeout(ctx, ttl)
		err := cfg.Refresh(refreshCtx)
		cancel()
		if gone := configGone(err, config); gone != "" {
			return gone
		}
		if err != nil {
			continue // no word from the server: the keeper warns if it lasts
		}
		rev := cfg.State().Revision()
		if rev < highest {
			return config + " was destroyed and created again"
		}
		highest = rev
		if lost := stillHeld(cfg, key, value); lost != "" {
			return lost
		}
	}
}

// configGone says so if err is the config destroyed under the member: its
// lease went with it, and a retry would never hear from the stream again.
func configGone(err error, config string) string {
	switch {
	case errors.Is(err, statesync.ErrReplaced):
		return config + " was destroyed and created again"
	case errors.Is(err, statesync.ErrDeleted):
		return config + " was destroyed (by another process)"
	}
	return ""
}

// watchesInput: the end of input ends a member when input is a pipe or a
// terminal. A service's /dev/null ends at once, and is not watched.
func watchesInput(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return true
	}
	info, err := f.Stat()
	if err != nil {
		return false
	}
	return info.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 || isTerminal(f)
}

// stillHeld is "" when KEY is in the local copy with VALUE under this
// process's lease KEY, or says what happened to it.
func stillHeld(cfg *sharedconfig.Config, key, value string) string {
	p, ok := cfg.State().Lookup(key)
	switch {
	case !ok:
		return fmt.Sprintf("'%s' is gone (removed by another writer, or its lease ended)", repl.Shown(key))
	case p.Lease != key || p.Value != value:
		return fmt.Sprintf("another writer changed '%s' (at revision %d)", repl.Shown(key), p.Revision)
	}
	for _, l := range cfg.Leases().List() {
		if l.Name == key && l.Mine {
			return ""
		}
	}
	return "the lease ended"
}

// revokeMember revokes the lease, if this process holds it, quietly: the
// failure that led here has been said.
func revokeMember(s *session, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.cfg.Leases().RevokeHeld(ctx)
}

func memberWarning(cmd *cobra.Command, f *rootFlags, msg string) {
	if f.output == "json" {
		repl.WriteJSON(cmd.OutOrStdout(), map[string]any{"event": "lease_warning", "message": msg})
		return
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "!!!! "+msg)
}
