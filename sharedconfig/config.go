// Package sharedconfig is a key/value configuration shared by many processes:
// Pravega's SharedConfig sample, on the statesync synchronizer.
//
// Reads (Get, State) use the local copy and do no I/O: they may be stale
// until Refresh or the process's next write, as in the original. Every write
// is a conditional append that lands only if the writer's copy was the
// latest; otherwise the writer catches up and decides again. The writes
// are Put, Replace, Remove and Clear; the original's conditional ones are
// options (write.go): Put with IfAbsent, Replace or Remove with IfValue or
// IfRevision, Put with WithLease. Unlike the original, a write that decides
// not to write (a put-if-absent on an existing key, a remove or replace
// whose value or revision does not match, a clear of an empty config)
// checks that its copy was current, so its answer was true of the shared
// config at some instant during the call.
//
// Besides the operations: History reads the log back as changes (LOG, or
// one key's: HISTORY), and Watch tells of each change as it lands,
// keeping the local copy current (FOLLOW, WATCH). Import sets many keys in
// one update (export.go); the file that export writes and import reads is
// package exportfile's, made from a State. An entry another program
// published is stepped over; one that claims to be sharedconfig's and does
// not decode leaves the config readable at its last good state, which
// Repair writes past the damage (repair.go; with DryRun it only lists what
// it would discard).
//
// Leases (Config.Leases) registers, keeps alive and revokes this process's
// leases, under which keys live only as long as their holder (lease*.go).
package sharedconfig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// CompactionPolicy says when a process writes a snapshot and drops the
// history before it. A zero rule is off.
type CompactionPolicy struct {
	// Removes: compact after this many Remove calls by this process,
	// conditional or not, whether or not they removed anything.
	Removes uint
	// OnClear: compact after every Clear.
	OnClear bool
	// MaxEntries: compact when the history since the last snapshot
	// reaches this many entries.
	MaxEntries uint64
}

// DefaultCompaction is the original's policy (every 5th Remove, every
// Clear) plus a bound on the history, so that a put-only workload cannot
// grow it without bound.
func DefaultCompaction() CompactionPolicy {
	return CompactionPolicy{Removes: 5, OnClear: true, MaxEntries: 1000}
}

// Options configure Open.
type Options struct {
	// Compaction: compact by DefaultCompaction, as the original does.
	// Without it or CompactionPolicy, the config is compacted only by
	// Compact.
	Compaction bool
	// CompactionPolicy, if set, is the policy, in place of the one
	// Compaction picks.
	CompactionPolicy *CompactionPolicy
	// CompactionFailed, if set, hears of compactions that failed. A failed
	// compaction loses nothing (the history just stays longer) and does not
	// fail the operation that triggered it.
	CompactionFailed func(error)
	// Trace, if set, sees every attempt of every conditional write.
	Trace func(statesync.Attempt)
	// Combining: under contention, a Put without a lease or condition is
	// handed to the writer under way, which commits it in its own entry,
	// and this process commits those handed to it (docs/consistency.md,
	// "Combining"). Off, writers only take turns.
	Combining bool
	// CatchingUp, if set, hears how a long catch-up goes (see
	// statesync.WithProgress).
	CatchingUp func(done, total uint64)
	// Holder names this process as the holder of the leases it registers
	// (lease.go); empty means a random name.
	Holder string
	// MostlyReads: the process joins the writers' turns (and says hello to
	// them) only at its first conditional write, not when it opens the
	// config, so that one that only reads adds nothing to their traffic
	// (turns.Options.FromFirstWrite). Nor does Open write the initial
	// state of a log that holds none (never written, or emptied by a
	// purge): the config reads as empty, and its first write creates it.
	MostlyReads bool
	// TurnsTrust, if set, is what an earlier process of this writer
	// learned of other writers' words about their slow tries
	// (Config.TurnsTrust): the config starts from it rather than trusting
	// such words in full, so that made-up words do not cost each process
	// seconds anew (turns.Options.Trust).
	TurnsTrust *turns.Trust
	// Resume, if set, is a Checkpoint of this config taken earlier: Open
	// starts from it and reads only the entries after it. One of another
	// incarnation of the log (deleted and created again) is dropped and the
	// log loaded afresh; bytes that are not a checkpoint are ignored.
	Resume []byte
}

// Config is one shared config, open in this process. It is safe for
// concurrent use.
type Config struct {
	sync   *statesync.Synchronizer[State]
	log    statesync.Log
	opts   Options
	policy CompactionPolicy
	turns  *turns.Manager // the synchronizer's

	mu sync.Mutex
	// removes counts Remove calls since this process last compacted, in
	// Removes' own type: an int of a Removes past MaxInt64 is negative.
	removes uint

	leases   leaseClient
	life     configLife
	watchMu  sync.Mutex
	watchers map[*watcher]struct{}
	watching atomic.Int32 // len(watchers), read without the lock
}

// ErrNotUTF8: keys, values and lease names must be UTF-8 text.
var ErrNotUTF8 = errors.New("keys, values and lease names must be UTF-8 text")

// Open opens the shared config held in log, initialising it as empty if the
// log holds no state (unless Options.MostlyReads) and loading it otherwise. When the log holds an entry that
// cannot be read, Open returns the config at its last good state together
// with a *DamagedError: reads work, writes fail, Repair mends it. When the
// log's state is gone (statesync.ErrStateGone), it holds no state to read
// (StateGone says so), and the DamagedError's GoodRevision is 0.
func Open(ctx context.Context, log statesync.Log, o Options) (*Config, error) {
	var syncOpts []statesync.Option
	if o.Trace != nil {
		syncOpts = append(syncOpts, statesync.WithTrace(o.Trace))
	}
	if o.CatchingUp != nil {
		syncOpts = append(syncOpts, statesync.WithProgress(o.CatchingUp))
	}
	c := &Config{log: log, opts: o, leases: newLeaseClient(o.Holder)}
	switch {
	case o.CompactionPolicy != nil:
		c.policy = *o.CompactionPolicy
	case o.Compaction:
		c.policy = DefaultCompaction()
	}
	syncOpts = append(syncOpts, statesync.WithApplied(c.applied), statesync.WithBatch(State.applyAll), statesync.WithDropped(c.leases.dropAll),
		statesync.WithRecreate[State](snapshotUpdate{State{}}))
	c.turns = turns.New(turns.Options{FromFirstWrite: o.MostlyReads, Trust: o.TurnsTrust})
	syncOpts = append(syncOpts, statesync.WithTurns(c.turns))
	if o.Combining {
		syncOpts = append(syncOpts, statesync.WithCombining())
	}
	c.sync = statesync.New[State](log, codec{}, syncOpts...)
	if err := c.load(ctx, o.Resume); err != nil {
		var entryErr *statesync.EntryError
		if _, rev := c.sync.State(); (rev != 0 || c.sync.Gone() != nil) && errors.As(err, &entryErr) {
			return c, &DamagedError{Entry: entryErr, GoodRevision: rev, log: log.Name()}
		}
		c.Close()
		return nil, err
	}
	return c, nil
}

// configLife is what a Config runs in the background (lease keepers), for
// Close to stop.
type configLife struct {
	mu      sync.Mutex
	closed  bool
	next    int
	keepers map[int]func()
}

// Close stops what the config runs in the background and waits for it to
// end: lease keepers, watches, and its hearing of other writers' turns.
// It revokes nothing (see Leases.RevokeHeld) and does not close
// the log, which the caller opened. The local copy stays readable. Closing
// again does nothing.
func (c *Config) Close() {
	c.life.mu.Lock()
	closed := c.life.closed
	c.life.closed = true
	keepers := c.life.keepers
	c.life.keepers = nil
	c.life.mu.Unlock()
	if closed {
		return
	}
	for _, stop := range keepers {
		stop()
	}
	c.sync.Close()
}

// StateGone returns the error that said so while the log's state is gone
// (it wraps statesync.ErrStateGone: entries purged by hand, then an update
// kept): State is then empty and means nothing, and writes fail until
// Repair. Nil otherwise.
func (c *Config) StateGone() error { return c.sync.Gone() }

// Revision returns the revision the local copy stands at, with or without
// a state (statesync.Synchronizer.Revision); ok is false when it stands
// nowhere (the config was destroyed under it, or its state is gone).
func (c *Config) Revision() (rev uint64, ok bool) { return c.sync.Revision() }

// Purged returns the revision up to which this config last found its log
// purged by hand (statesync.Synchronizer.Purged): opening it, or a
// command, read it emptied there, or read that it started again after such
// a purge when the copy held a state from before. 0 if it never did.
func (c *Config) Purged() uint64 { return c.sync.Purged() }

// State is the local copy, at its revision (State.Revision): no I/O.
func (c *Config) State() State {
	st, rev := c.sync.State()
	st.revision = rev
	return st
}

// entriesSinceCompaction is the history a new reader would replay after the
// newest snapshot, as this process knows it.
func (c *Config) entriesSinceCompaction() uint64 { return c.sync.EntriesSinceCompaction() }

// Log is the log the config is stored in.
func (c *Config) Log() statesync.Log { return c.log }

// Get returns the local value of key.
func (c *Config) Get(key string) (string, bool) {
	p, ok := c.State().Lookup(key)
	return p.Value, ok
}

// TurnsTrust is what this config has learned of other writers' words
// about their slow tries, for a later process of this writer to start from
// (Options.TurnsTrust); learned is false when it has nothing to add (see
// turns.Manager.Trust).
func (c *Config) TurnsTrust() (t turns.Trust, learned bool) { return c.turns.Trust() }

// Refresh brings the local copy up to date with the shared config.
func (c *Config) Refresh(ctx context.Context) error { return c.sync.Fetch(ctx) }

// update runs fn through the synchronizer and then applies the compaction
// policy.
func update[R any](ctx context.Context, c *Config, fn func(State) ([]statesync.Update[State], R), keysAndValues ...string) (R, error) {
	r, _, err := updateAt(ctx, c, fn, nil, keysAndValues...)
	return r, err
}

// updateAt is update that also returns the state just after its entry (see
// statesync.UpdateState): what the entry did, for an update whose effect
// the log's time decides.
func updateAt[R any](ctx context.Context, c *Config, fn func(State) ([]statesync.Update[State], R), op []byte, keysAndValues ...string) (R, State, error) {
	for _, s := range keysAndValues {
		if !utf8.ValidString(s) {
			var zero R
			return zero, State{}, fmt.Errorf("%q: %w", s, ErrNotUTF8)
		}
	}
	if err := c.initialize(ctx); err != nil {
		var zero R
		return zero, State{}, err
	}
	r, after, err := statesync.UpdateOp(ctx, c.sync, fn, op)
	if err != nil {
		return r, State{}, err
	}
	c.compactIfDue(ctx)
	return r, after, nil
}

// compactIfDue compacts when compactionDue says so, and still says so
// after the catch-ups of a compaction that lost to another writer.
func (c *Config) compactIfDue(ctx context.Context) {
	if c.compactionDue() {
		c.compact(ctx, c.compactionDue)
	}
}

// compactionDue: the policy's entry count is reached, and, up to 4 times
// that count, no entry carrying handed calls has been seen for
// carriedQuiet. The writers of those calls learn what became of them only
// by reading that entry, and one paused for a moment (a loaded machine, a
// stopped process) reads it late; a later write compacts in its place.
func (c *Config) compactionDue() bool {
	n := c.sync.EntriesSinceCompaction()
	if c.policy.MaxEntries == 0 || n < c.policy.MaxEntries {
		return false
	}
	return n >= 4*c.policy.MaxEntries || time.Since(c.sync.LastCarried()) >= carriedQuiet
}

// carriedQuiet is how long compactIfDue waits after an entry that carries
// handed calls.
const carriedQuiet = time.Second

// compact compacts for the policy, while due (nil: always) says so. Being
// the policy's, it leaves a copy since dropped alone (see CompactIf).
func (c *Config) compact(ctx context.Context, due func() bool) {
	if due == nil {
		due = always
	}
	c.mu.Lock()
	c.removes = 0
	c.mu.Unlock()
	err := c.sync.CompactIf(ctx, snapshotOf, due)
	if err != nil && c.opts.CompactionFailed != nil {
		c.opts.CompactionFailed(err)
	}
}

// always is the due of the rules on removes and clears, once they call.
func always() bool { return true }

// countRemove applies the rule on removes: every Removes-th compacts.
func (c *Config) countRemove(ctx context.Context) {
	if c.policy.Removes == 0 {
		return
	}
	c.mu.Lock()
	c.removes++
	due := c.removes >= c.policy.Removes
	c.mu.Unlock()
	if due {
		c.compact(ctx, nil)
	}
}

// Compact writes a snapshot of the config and drops the history before it.
func (c *Config) Compact(ctx context.Context) error {
	if err := c.initialize(ctx); err != nil {
		return err
	}
	return c.sync.Compact(ctx, snapshotOf)
}

// initialize gives the copy a state if it holds none: the log was deleted
// or emptied under this process, which said so, or it held no state when a
// process that mostly reads opened it. A write creates the config, empty,
// as opening it would.
func (c *Config) initialize(ctx context.Context) error {
	if _, rev := c.sync.State(); rev != 0 {
		return nil
	}
	return c.sync.Initialize(ctx, snapshotUpdate{State{}})
}

type updates = []statesync.Update[State]

// Clear deletes every key of the shared config, even when the local copy
// looks empty, and returns how many there were.
func (c *Config) Clear(ctx context.Context) (removed int, err error) {
	removed, err = update(ctx, c, func(s State) (updates, int) {
		if s.Len() == 0 {
			return nil, 0
		}
		return updates{clearUpdate{}}, s.Len()
	})
	if err == nil && c.policy.OnClear {
		c.compact(ctx, nil)
	}
	return removed, err
}

// snapshotOf is the snapshot a compaction writes: the whole state.
func snapshotOf(s State) statesync.InitialUpdate[State] { return snapshotUpdate{s} }
