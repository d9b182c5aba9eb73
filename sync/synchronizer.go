package statesync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Synchronizer keeps a local copy of a state that lives in a Log. Reads of
// the local copy (State) do no I/O; every change goes through UpdateState.
// A Synchronizer is safe for concurrent use; its I/O operations run one at a
// time.
type Synchronizer[S any] struct {
	log      Log
	codec    Codec[S]
	trace    func(Attempt)
	applied  func(Applied[S])
	progress func(done, total uint64)
	batch    func(s S, updates []Update[S], revisions []uint64) S // WithBatch, or nil
	dropped  func()                                               // WithDropped, or nil
	recreate InitialUpdate[S]                                     // WithRecreate, or nil

	mu    sync.Mutex // serialises Fetch, UpdateState's batches, Initialize and Compact
	local atomic.Pointer[local[S]]
	// readingBack is the revision of this synchronizer's own entry being
	// read back (see TimedUpdate), so that watchers hear it as local.
	readingBack uint64
	readBackAt  time.Time // the log's time on that entry, once read
	queue       queue[S]  // UpdateState calls waiting for the batch in flight
	// While ownInFlight UpdateUnconditionally appends are under way, a
	// catch-up keeps in afterOwn (under mu) the state just after each of
	// this synchronizer's own entries that it applies on its own: a read
	// that takes such an entry in before its writer reads it back must not
	// leave the writer only a later state to judge it by.
	ownInFlight atomic.Int32
	afterOwn    map[Position]S

	cm          *turns.Manager // how it takes turns with other writers
	holdingBack atomic.Int32   // writes holding back for other writers' turns now
	life        lifetime

	logTime atomic.Pointer[logTime] // the log's clock, as the last read saw it

	ops     OpCodec[S] // the codec, if it decodes ops (UpdateOp)
	combine combining[S]

	purgeMet atomic.Uint64 // see Purged
	drops    atomic.Uint64 // copies dropped (dropLocked), for followers to hear of
}

// logTime is what a read told of the log's clock.
type logTime struct {
	stored, seen time.Time
	revision     uint64 // of the entry stored at stored
}

// LastLogTime returns the log's clock as the last read that carried a time
// saw it (entries read back after an append included): the time the log
// stored the newest entry read, and the local time the read ended. The
// log's clock stood at stored or later at seen. Both are zero until a read
// carries a time.
func (s *Synchronizer[S]) LastLogTime() (stored, seen time.Time) {
	if lt := s.logTime.Load(); lt != nil {
		return lt.stored, lt.seen
	}
	return time.Time{}, time.Time{}
}

// local is what the synchronizer knows: a state, and where it came from.
type local[S any] struct {
	revisioned[S]
	initialized bool
	compactedAt uint64 // revision of the newest snapshot applied or written
	id          string // the ID of the entry at Revision, if known (see incarnation.go)
	// emptied: the copy holds no state because the log holds none up to
	// Revision (ErrEmptied); gone: because the log's state is gone
	// (ErrStateGone), which it says (see emptied.go).
	emptied bool
	gone    error
	dropped bool // the log was deleted under it: it stands nowhere
	// purgedAt is the newest revision up to which the log was purged by
	// hand, as known from its snapshots or found here: every compaction
	// carries it on (Entry.Purged), for copies older than the purge.
	purgedAt uint64
	// damagedAt is the revision of an entry after Revision that a read
	// found unreadable (an *EntryError), 0 if none: until the copy moves
	// past it, an unconditional append reads first (UpdateUnconditionally).
	damagedAt uint64
}

// Attempt describes one try of a write, for tracing.
type Attempt struct {
	N int // 1 for the first try
	// Base is the revision the try was based on, or AnyRevision for an
	// unconditional append (UpdateUnconditionally), which cannot lose.
	Base     uint64
	Updates  int    // updates the function returned; 0 means nothing to write
	Revision uint64 // on success, the revision the entry landed at
	// Conflict is set when the log had moved on; CaughtUp is then the
	// revision the synchronizer caught up to before the next try.
	Conflict *ConflictError
	CaughtUp uint64
	// Stopped: after the conflict the write made no next try, since its
	// catch-up failed or its context ended (its error says which).
	Stopped bool
	// HeldBack is how long the try waited, before it ran, for older
	// writers' turns (see package turns).
	HeldBack time.Duration
	// Carried: another writer's entry, at Revision, carried the write
	// (UpdateOp); this try was not made. Base is then where the call's
	// window starts (the revision its copy stood at when the call got the
	// ID it was carried under: its first try's base as a rule, which may
	// be before tries it lost), not where the copy stood when it was
	// handed.
	Carried bool
}

// Option configures a Synchronizer.
type Option func(*options)

type options struct {
	trace    func(Attempt)
	applied  any // func(Applied[S]) for the synchronizer's S
	batch    any // func(S, []Update[S], []uint64) S for the synchronizer's S
	progress func(done, total uint64)
	turns    *turns.Manager
	dropped  func()
	recreate any // InitialUpdate[S] for the synchronizer's S
	combine  bool
}

// WithTurns makes m the synchronizer's contention manager (package turns),
// in place of one with the default options. m serves this synchronizer
// only.
func WithTurns(m *turns.Manager) Option { return func(o *options) { o.turns = m } }

// WithProgress calls fn as a catch-up goes, every 1,024 entries and at its
// end, with how many of the entries it set out to read are done. Catch-ups
// of fewer entries do not call it.
func WithProgress(fn func(done, total uint64)) Option {
	return func(o *options) { o.progress = fn }
}

// WithTrace calls fn after every attempt of a conditional write.
func WithTrace(fn func(Attempt)) Option { return func(o *options) { o.trace = fn } }

// WithApplied calls fn for every entry the local copy takes in, whether it
// was read from the log or written by this synchronizer, in revision order,
// once State shows it (a long catch-up shows its progress, and tells fn of
// it, every 4,096 entries). So a listener that fn tells of entries, set up
// by reading State under a lock fn takes too, hears every entry after the
// revision it read, each once, and nothing before it. fn runs while the
// synchronizer's lock is held: it must not call back into it, except for
// State. S must be the synchronizer's state type: New panics otherwise.
func WithApplied[S any](fn func(Applied[S])) Option {
	return func(o *options) { o.applied = fn }
}

// WithCombining lets the synchronizer hand its UpdateOp calls, under
// contention, to the writer under way, and carry those handed to it
// (combining, see combine.go); its codec must be an OpCodec.
func WithCombining() Option { return func(o *options) { o.combine = true } }

// WithDropped calls fn each time the synchronizer drops its copy because
// the log was deleted, or deleted and created again (ErrDeleted,
// ErrReplaced), before it loads the log afresh: what a caller keeps of the
// old log, such as its own entries' revisions, names nothing in the new
// one, whose revisions start again at 1. fn runs while the synchronizer's
// lock is held: it must not call back into it.
func WithDropped(fn func()) Option { return func(o *options) { o.dropped = fn } }

// WithRecreate makes init what writes create the log with again when it
// was deleted while they waited behind the call that found it: that call
// reports ErrDeleted and drops the copy, and the writes queued behind it
// (in its batch, or after it) run, in order, on the log created again, as
// they would have had they started after its answer; a write that takes
// no turns (turns.Without) never does. Without it they report ErrDeleted
// too, and the next Initialize creates the log again. S must be the
// synchronizer's state type: New panics otherwise.
func WithRecreate[S any](init InitialUpdate[S]) Option {
	return func(o *options) { o.recreate = init }
}

// WithBatch makes applyAll the way a catch-up applies a run of updates,
// for a state that can apply them at once faster than one at a time (say,
// by keeping only the last write to each key). revisions[i] is the revision
// of the entry that carries updates[i]; none is a TimedUpdate (an entry
// holding one is applied on its own). The result must equal applying them
// in order. An option rather than a method the synchronizer looks for on
// the state, so that the compiler checks applyAll's type where it is
// given, and the state need not export it. S must be the synchronizer's
// state type: New panics otherwise.
func WithBatch[S any](applyAll func(s S, updates []Update[S], revisions []uint64) S) Option {
	return func(o *options) { o.batch = applyAll }
}

// New returns a synchronizer over log. Its state is empty and uninitialized
// until Initialize or Fetch loads it.
//
// New panics if a WithApplied, WithBatch or WithRecreate option was made
// for another state type than S: that is a mistake in the program, which
// would otherwise leave the watcher silently unheard (or the batching
// unused), and it shows on the first run of any test that builds the
// synchronizer.
// (Option is not generic, so that WithTrace and WithProgress need no type
// argument; the price is this check at run time.)
func New[S any](log Log, codec Codec[S], opts ...Option) *Synchronizer[S] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Synchronizer[S]{log: log, codec: codec, trace: o.trace, progress: o.progress, cm: o.turns, dropped: o.dropped}
	if s.cm == nil {
		s.cm = turns.New(turns.Options{})
	}
	if ops, ok := codec.(OpCodec[S]); ok && o.combine {
		s.ops = ops
		s.cm.Takes(s.takeHanded)
	}
	s.applied = optionFor[func(Applied[S])]("WithApplied", o.applied)
	s.batch = optionFor[func(S, []Update[S], []uint64) S]("WithBatch", o.batch)
	s.recreate = optionFor[InitialUpdate[S]]("WithRecreate", o.recreate)
	s.local.Store(&local[S]{})
	return s
}

// optionFor is fn, given to the option named option, as the function of
// the synchronizer's state type F, or nil if not given; it panics if fn is
// for another state type.
func optionFor[F any](option string, fn any) F {
	var f F
	if fn == nil {
		return f
	}
	f, ok := fn.(F)
	if !ok {
		panic(fmt.Sprintf("statesync.New: %s was given a %T, for another state type than %v's", option, fn, reflect.TypeFor[F]()))
	}
	return f
}

// State returns the local copy of the state and the revision of the log it
// is the state as of: the state after applying every entry up to and
// including that revision. Revision 0 (a log's first entry is 1): it holds
// none yet. It does no I/O, so it may be behind the log until Fetch. The
// state must be treated as immutable: the synchronizer hands the same value
// to concurrent readers.
func (s *Synchronizer[S]) State() (state S, revision uint64) {
	l := s.local.Load()
	if !l.initialized {
		return state, 0
	}
	return l.Value, l.Revision
}

// Revision returns the revision the local copy stands at, whether or not
// it holds a state there (a log emptied up to it holds none; one never
// written stands at 0). ok is false when it stands nowhere: the log was
// deleted under it, or its state is gone (Gone).
func (s *Synchronizer[S]) Revision() (rev uint64, ok bool) {
	l := s.local.Load()
	return l.Revision, !l.dropped && l.gone == nil
}

// StatePosition is State with the position the state is as of: its
// revision and the ID of the entry there, read together, so that a write
// of that state elsewhere than through UpdateState can be bound to that
// entry as the synchronizer's own writes are.
func (s *Synchronizer[S]) StatePosition() (state S, at Position) {
	l := s.local.Load()
	if !l.initialized {
		return state, Position{}
	}
	return l.Value, l.position()
}

// EntriesSinceCompaction is how many entries the local copy has applied since
// the newest snapshot it knows of: the history a new reader would replay.
func (s *Synchronizer[S]) EntriesSinceCompaction() uint64 {
	l := s.local.Load()
	return l.Revision - l.compactedAt
}

// Fetch brings the local copy up to the end of the log as of the call.
func (s *Synchronizer[S]) Fetch(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.fetchLocked(ctx, 0)
	return err
}

// fetchLocked reads the log up to target (0: the log's last revision as of
// now) and returns the revision reached. On an error the local copy keeps
// every entry applied before it.
func (s *Synchronizer[S]) fetchLocked(ctx context.Context, target uint64) (uint64, error) {
	cur := *s.local.Load()
	if target == 0 {
		last, err := s.log.LastPosition(ctx)
		if err != nil {
			return cur.Revision, s.replacedLocked(ctx, err)
		}
		if last.ID != "" && last == cur.position() {
			return cur.Revision, nil // the log ends at the copy's own entry
		}
		target = last.Revision
	}
	if target < cur.Revision {
		return s.reloadedLocked(ctx, s.shorterLog(cur.Revision, target))
	}
	if target == cur.Revision {
		return s.sameLengthLocked(ctx, cur)
	}
	return s.readToLocked(ctx, cur, target, true)
}

// readToLocked reads the log after cur up to target. known: the log said
// it holds entries up to target, so those a read does not deliver carry
// no state, and the copy is at target; a target nobody vouches for (an
// answer, see combine.go) leaves the copy at the last entry delivered.
func (s *Synchronizer[S]) readToLocked(ctx context.Context, cur local[S], target uint64, known bool) (uint64, error) {
	c := &catchUp[S]{s: s, cur: cur, start: cur.Revision, total: target - cur.Revision, held: cur.initialized, base: cur.compactedAt}
	err := s.log.ReadAfter(ctx, cur.position(), target, c.take)
	c.finish()
	if !c.newest.IsZero() {
		s.logTime.Store(&logTime{stored: c.newest, seen: time.Now(), revision: c.newestAt})
	}
	if err == nil && known && c.cur.Revision < target {
		// Every entry up to target was read; those not delivered carry no
		// state, so the copy is at target. (A snapshot that covered a gap
		// may have taken it further.)
		c.cur.Revision, c.cur.id = target, ""
	}
	if err == nil {
		c.cur.dropped = false // it stands where the read took it
	}
	var entryErr *EntryError
	if errors.As(err, &entryErr) && !errors.Is(err, ErrStateGone) {
		c.cur.damagedAt = entryErr.Revision
	}
	c.deliver()
	if errors.Is(err, ErrReplaced) {
		return s.reloadedLocked(ctx, err)
	}
	if errors.Is(err, ErrEmptied) {
		return s.emptiedLocked(cur.initialized, target, err)
	}
	if errors.Is(err, ErrStateGone) {
		return s.goneLocked(err)
	}
	if c.purged != 0 {
		return c.cur.Revision, s.purgedAcrossLocked(c.purged, c.again, err)
	}
	return c.cur.Revision, err
}

// catchUp carries one read of the log into a copy of the local state.
// Updates wait in pending to be applied together when the state can do that
// faster (WithBatch); a snapshot, a full batch or the end of the read
// applies them.
type catchUp[S any] struct {
	s         *Synchronizer[S]
	cur       local[S]
	pending   []Update[S]
	revisions []uint64          // of the entries that carry pending
	applied   []Applied[S]      // for the applied hook, once the copy shows them
	speakers  map[string]uint64 // the last entry read of each speaker (see package turns)
	// The speaker of the last entry read with one, its time, and how long
	// after the entry before it, when that was the same speaker's (else -1).
	last         string
	lastTime     time.Time
	gap          time.Duration
	start, total uint64    // where the read began, and how many entries it covers
	newest       time.Time // the log's time on the newest entry read that had one
	newestAt     uint64    // that entry's revision
	// purged and again: a snapshot at again says the log was purged up to
	// purged, at or after the snapshot the copy's state stems from (base):
	// the copy, which held a state (held), read entries the purge removed.
	purged, again, base uint64
	held                bool
}

// take is the Log.Read callback: it takes in one entry.
func (c *catchUp[S]) take(e Entry) error {
	if !e.Time.IsZero() {
		c.newest, c.newestAt = e.Time, e.Revision
	}
	var settled []Carried
	if len(e.Carried) > 0 && len(c.s.combine.mine) > 0 {
		c.flush()
		settled = c.s.settleLocked(c.cur.Value, e)
	}
	if e.Snapshot && e.Purged >= c.base && e.Purged > 0 && c.held && c.purged == 0 {
		c.purged, c.again = e.Purged, e.Revision
	}
	a, err := c.takeEntry(e)
	if err != nil {
		return err
	}
	c.s.readCombinedLocked(e)
	c.cur.id = e.ID
	if e.Revision == c.s.readingBack {
		c.s.readBackAt = e.Time
	}
	a.Local = e.Revision == c.s.readingBack || e.Speaker != "" && e.Speaker == c.s.cm.ID()
	a.flipped = flippedCalls(a.Local, e.Carried, settled)
	if a.Local && a.HasStates && c.s.ownInFlight.Load() > 0 {
		if c.s.afterOwn == nil {
			c.s.afterOwn = map[Position]S{}
		}
		c.s.afterOwn[e.Position] = a.After
	}
	if e.Speaker != "" && len(e.Speaker) <= 64 {
		if c.speakers == nil {
			c.speakers = map[string]uint64{}
		}
		c.gap = -1
		if prev, ok := c.speakers[e.Speaker]; ok && prev == e.Revision-1 && !e.Time.IsZero() && !c.lastTime.IsZero() {
			c.gap = e.Time.Sub(c.lastTime)
		}
		c.speakers[e.Speaker] = e.Revision
		c.last, c.lastTime = e.Speaker, e.Time
	}
	if c.s.applied != nil {
		if c.applied == nil {
			c.applied = make([]Applied[S], 0, min(c.total, batchSize))
		}
		c.applied = append(c.applied, a)
		if len(c.applied) >= batchSize {
			c.deliver()
		}
	}
	if done := c.cur.Revision - c.start; c.reporting() && done%progressEvery == 0 {
		c.s.progress(min(done, c.total), c.total)
	}
	return nil
}

func (c *catchUp[S]) takeEntry(e Entry) (Applied[S], error) {
	if c.s.batch == nil || e.Snapshot || e.Foreign != "" || !c.cur.initialized {
		c.flush()
		var a Applied[S]
		var err error
		c.cur, a, err = c.s.apply(c.cur, e)
		return a, err
	}
	a, err := c.s.decode(e)
	if err != nil {
		return a, err
	}
	if anyTimed(a.Updates) {
		// Applied on its own, so that watchers see the states around it.
		c.flush()
		c.cur, a = c.s.applyUpdates(c.cur, a)
		return a, nil
	}
	for _, u := range a.Updates {
		c.pending, c.revisions = append(c.pending, u), append(c.revisions, e.Revision)
	}
	c.cur.Revision = e.Revision
	if len(c.pending) >= batchSize {
		c.flush()
	}
	return a, nil
}

// flush applies the updates waiting in pending.
func (c *catchUp[S]) flush() {
	if len(c.pending) > 0 {
		c.cur.Value = c.s.batch(c.cur.Value, c.pending, c.revisions)
		c.pending, c.revisions = c.pending[:0], c.revisions[:0]
	}
}

// deliver makes the local copy what the catch-up has read so far and then
// tells the applied hook of the entries taken in since the last delivery:
// the hook hears an entry only once State shows it, and a long catch-up
// holds no more than batchSize of them.
func (c *catchUp[S]) deliver() {
	c.flush()
	cur := c.cur // c.cur goes on changing
	c.s.local.Store(&cur)
	for _, a := range c.applied {
		c.s.applied(a)
	}
	clear(c.applied)
	c.applied = c.applied[:0]
}

// finish applies what is pending and reports the end of a long catch-up.
func (c *catchUp[S]) finish() {
	c.flush()
	if c.speakers != nil {
		c.s.cm.Saw(c.speakers)
		c.s.cm.SawGap(c.last, c.speakers[c.last], c.gap)
	}
	if c.reporting() {
		c.s.progress(c.total, c.total)
	}
}

// reporting: the catch-up is long enough to report progress, and someone
// listens.
func (c *catchUp[S]) reporting() bool { return c.s.progress != nil && c.total >= progressEvery }

// apply returns cur with entry e applied, and what to tell watchers.
func (s *Synchronizer[S]) apply(cur local[S], e Entry) (local[S], Applied[S], error) {
	bad := func(err error) (local[S], Applied[S], error) {
		return cur, Applied[S]{}, fmt.Errorf("%s: %w", s.log.Name(), &EntryError{Revision: e.Revision, Err: err})
	}
	if e.Foreign != "" {
		cur.Revision = e.Revision // nothing to apply: step over it
		return cur, Applied[S]{Entry: e}, nil
	}
	if e.Unconditional && !cur.initialized && cur.emptied {
		// On an emptied log it holds no state of its own: stepped over,
		// and told as what it is, with no states.
		a, err := s.decode(e)
		if err == nil {
			cur.Revision = e.Revision
		}
		return cur, a, err
	}
	if e.Snapshot {
		init, err := s.codec.DecodeInitial(e.Data)
		if err != nil {
			return bad(err)
		}
		st := init.Create(e.Revision)
		return local[S]{revisioned: revisioned[S]{Value: st, Revision: e.Revision}, initialized: true, compactedAt: e.Revision, purgedAt: e.Purged}, Applied[S]{Entry: e, After: st, HasStates: true}, nil
	}
	if !cur.initialized && cur.emptied {
		return bad(ErrStateGone) // a log emptied, then an update
	}
	if !cur.initialized {
		return bad(errors.New("an update comes before any initial state"))
	}
	a, err := s.decode(e)
	if err != nil {
		return cur, a, err
	}
	cur, a = s.applyUpdates(cur, a)
	return cur, a, nil
}

// applyUpdates applies a decoded update entry to cur.
func (s *Synchronizer[S]) applyUpdates(cur local[S], a Applied[S]) (local[S], Applied[S]) {
	a.Before = cur.Value
	for _, u := range a.Updates {
		cur.Value = applyOne(cur.Value, u, a.Revision, a.Time)
	}
	a.After, a.HasStates = cur.Value, true
	cur.Revision = a.Revision
	return cur, a
}

// decode decodes an update entry.
func (s *Synchronizer[S]) decode(e Entry) (Applied[S], error) {
	updates, err := s.codec.DecodeUpdates(e.Data)
	if err != nil {
		return Applied[S]{}, fmt.Errorf("%s: %w", s.log.Name(), &EntryError{Revision: e.Revision, Err: err})
	}
	return Applied[S]{Entry: e, Updates: updates}, nil
}

func (s *Synchronizer[S]) notifyApplied(a Applied[S]) {
	if s.applied != nil {
		s.applied(a)
	}
}

// UpdateState is the one way to change the state conditionally. It calls fn
// with the local state; if fn returns updates, they are appended to the log
// only if the log is still at the revision fn saw. When the log has moved on,
// UpdateState catches up and calls fn again at once, until the append lands
// or ctx ends (writers take turns once one keeps losing, see
// package turns). fn may
// therefore run several times and must have no side effects; its result from
// the last run is returned.
//
// When fn returns no updates nothing is written, but UpdateState first checks
// that the log has not moved past the state fn saw (and, if it has, catches up
// and runs fn again), so a decision not to write was true of the shared state
// at some instant during the call, not only of a stale local copy.
//
// Calls that arrive while another call's append is in flight are committed
// together, as one entry (group commit, see groupcommit.go): each fn sees
// the state the calls before it in the batch produced, and each call gets
// its own result. A call that finds no append in flight runs at once.
//
// The shape is etcd's runSTM: run fn on the local copy, then commit (or
// confirm that the copy is current), and on a conflict catch up and repeat.
//
// Besides fn's result, UpdateState returns the local state as it was just
// after the call's entry was applied (or, when fn wrote nothing, the state
// its decision was confirmed on): what the entry did, whatever the copy has
// taken in since (a Follow, say). Under group commit it is the state just
// after this call's own updates in the batch's entry, without those of the
// calls batched after it.
func UpdateState[S, R any](ctx context.Context, s *Synchronizer[S], fn func(state S) ([]Update[S], R)) (R, S, error) {
	return UpdateOp(ctx, s, fn, nil)
}

// commitLocked appends updates on the condition that the log is still at
// cur's revision and, once they land, applies them to the local copy. It
// returns the revision they landed at. The entry names the calls it
// carries: carried, this writer's calls that were handed out, and others,
// the calls of other writers, whose updates end updates.
func (s *Synchronizer[S]) commitLocked(ctx context.Context, cur local[S], updates []Update[S], carried, others []Carried) (uint64, error) {
	if !cur.initialized {
		return 0, s.noStateLocked(cur)
	}
	theirs := len(others) > 0
	fenced := s.fencesLocked(cur.Revision)
	carried = slices.Concat(carried, fenced, others)
	data, err := s.codec.EncodeUpdates(updates)
	if err != nil {
		return 0, &encodeError{err} // a batch tries each call alone
	}
	at, err := s.log.AppendAfter(CarriedContext(turns.SpeakerContext(ctx, s.cm.ID()), carried), cur.position(), data)
	if err != nil {
		return 0, s.replacedLocked(ctx, err)
	}
	rev := at.Revision
	s.combine.fences = nil // named, or their windows are over
	s.wroteCombinedLocked(cur, at, carried, theirs)
	if anyTimed(updates) {
		// Only the log knows the time it stored the entry at: read it back.
		return rev, s.readBackLocked(ctx, rev)
	}
	before := cur.Value
	for _, u := range updates {
		cur.Value = u.Apply(cur.Value, rev)
	}
	cur.Revision, cur.id = rev, at.ID
	s.local.Store(&cur)
	// Time stays zero: only the log knows when it stored the entry.
	e := Entry{Position: at, Data: data, Carried: carried}
	s.notifyApplied(Applied[S]{Entry: e, Updates: updates, Local: true, Before: before, After: cur.Value, HasStates: true, flipped: others})
	return rev, nil
}

// readBackLocked reads the log up to rev, this synchronizer's own entry,
// whose effect the local copy cannot know without reading it: it depends on
// the entry's time, or on entries it did not wait for.
func (s *Synchronizer[S]) readBackLocked(ctx context.Context, rev uint64) error {
	s.readingBack, s.readBackAt = rev, time.Time{}
	defer func() { s.readingBack = 0 }()
	if _, err := s.fetchLocked(ctx, rev); err != nil {
		// Landed, but what it did depends on what it landed after.
		return fmt.Errorf("%w: written at revision %d, but reading it back failed: %w", ErrUnknownOutcome, rev, err)
	}
	return nil
}

// confirmCurrentLocked is the commit of a decision to write nothing, made
// on cur: it returns a *ConflictError if the log has moved past cur. A log
// that ends at cur's revision with another entry there was deleted and
// created again to the same length, and never held the state decided on:
// the copy is reloaded and ErrReplaced returned, as a write would find; a
// log deleted drops the copy (ErrDeleted).
func (s *Synchronizer[S]) confirmCurrentLocked(ctx context.Context, cur local[S]) error {
	last, err := s.log.LastPosition(ctx)
	if err != nil {
		// A log deleted drops the copy, as a write that finds it does:
		// kept, it would make every later decision find the same.
		return s.replacedLocked(ctx, err)
	}
	if last.Revision != cur.Revision {
		return &ConflictError{Current: last.Revision}
	}
	if last.ID != "" && cur.id != "" && last.ID != cur.id {
		return s.replacedLocked(ctx, fmt.Errorf("%s: its entry %d is not the one read (%s but %s): %w", s.log.Name(), cur.Revision, cur.id, last.ID, ErrReplaced))
	}
	return nil
}

// retryOnConflictLocked runs try, one conditional write based on the local
// copy, until it succeeds or fails with anything but a conflict. After each
// conflict it catches up to the revision the log reported, tells caughtUp
// (if set) how far it got and whether it stopped there (the catch-up
// failed, or ctx ended), and tries again at once unless it stopped.
func (s *Synchronizer[S]) retryOnConflictLocked(ctx context.Context, try func(attempt int, heldBack time.Duration) error, caughtUp func(*ConflictError, uint64, bool)) error {
	lost, err := s.retryLocked(ctx, try, caughtUp, nil)
	return gaveUp(ctx, lost, err)
}

// retryLocked is retryOnConflictLocked without the naming of the error: it
// returns the error that stopped it and how many tries in a row it had lost.
func (s *Synchronizer[S]) retryLocked(ctx context.Context, try func(attempt int, heldBack time.Duration) error, caughtUp func(*ConflictError, uint64, bool), handing *turns.Handing) (lost int, err error) {
	if err := s.ensureInitializedLocked(ctx); err != nil {
		return 0, err
	}
	w := s.cm.Start(ctx, s.log, turnsCopy[S]{s})
	if handing != nil {
		w.Hands(handing)
	}
	defer func() {
		if errors.Is(err, turns.ErrCommitted) {
			w.EndCommitted()
			return
		}
		w.End(err == nil)
	}()
	for attempt := 1; ; attempt++ {
		s.holdingBack.Add(1)
		held := w.HoldBack(ctx)
		s.holdingBack.Add(-1)
		if held != nil {
			return attempt - 1, held
		}
		began := time.Now()
		err := try(attempt, w.HeldBack())
		w.Tried(time.Since(began))
		var conflict *ConflictError
		if !errors.As(err, &conflict) {
			return attempt - 1, err
		}
		w.Lost(conflict.Current)
		rev, err := s.fetchLocked(ctx, conflict.Current)
		if err == nil {
			// A writer that lost is current again: it tries at once
			// (unless an older writer waits for its turn, see package
			// turns), while its context lasts.
			err = ctx.Err()
		}
		if caughtUp != nil {
			caughtUp(conflict, rev, err != nil)
		}
		if err != nil {
			return attempt, err
		}
	}
}

func (s *Synchronizer[S]) traceAttempt(a Attempt) {
	if s.trace != nil {
		s.trace(a)
	}
}

// gaveUp is the error of a write that stopped on err after losing lost
// tries in a row: when the context ended it, the write was starved by other
// writers, and a *turns.ContendedError says so rather than blaming the log. An
// append whose outcome is unknown stays that, and so does a log that did
// not answer (ErrNoAnswer): the write was cut off, not starved.
func gaveUp(ctx context.Context, lost int, err error) error {
	ended := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	if lost == 0 || ctx.Err() == nil || !ended || errors.Is(err, ErrUnknownOutcome) || errors.Is(err, ErrNoAnswer) {
		return err
	}
	return &turns.ContendedError{Lost: lost, Err: err}
}

// progressEvery is how often, in entries, a long catch-up reports.
const progressEvery = 1024

// batchSize is how many updates a catch-up gathers before applying them,
// and how many entries it takes in before it shows them (see deliver).
const batchSize = 4096

// UpdateUnconditionally appends updates whatever the log's revision, for
// updates that decide nothing from the state they were written on because
// each checks, as it is applied, what it needs (Pravega's
// updateStateUnconditionally; a lease refresh renews only a live lease its
// holder holds). Such a write never loses a race, so it never waits for a
// turn (package turns) and never keeps the writers waiting for theirs
// waiting longer. Nor does it wait for this process's other writes: it is
// appended without the synchronizer's lock (a lease refresh must land
// before its deadline whatever batch is in flight), and only reading it
// back takes the lock. It returns the state just after its entry, even when
// another read took the entry in first, if the entry was applied on its own
// (one holding a TimedUpdate always is); otherwise, or if a compaction
// covered the entry, the local state, which is later. Once a read has met
// an entry after the copy that does not read (an *EntryError), it appends
// nothing until a read gets past that entry (a repair): it fails as that
// read does.
func (s *Synchronizer[S]) UpdateUnconditionally(ctx context.Context, updates ...Update[S]) (S, error) {
	var none S
	data, err := s.codec.EncodeUpdates(updates)
	if err != nil {
		return none, err
	}
	if !s.local.Load().initialized {
		s.mu.Lock()
		err := s.ensureInitializedLocked(ctx)
		s.mu.Unlock()
		if err != nil {
			return none, err
		}
	}
	if cur := s.local.Load(); cur.damagedAt > cur.Revision {
		// Writes stop at an entry that does not read, and an append with
		// no condition would land past it, to be discarded by the repair:
		// read first, which fails until a repair has written past it.
		s.mu.Lock()
		_, err := s.fetchLocked(ctx, 0)
		s.mu.Unlock()
		if err != nil {
			return none, err
		}
	}
	// The speaker marks the entry as this process's for whichever read
	// takes it in (see catchUp.take).
	s.ownInFlight.Add(1)
	at, err := s.log.AppendAfter(turns.SpeakerContext(ctx, s.cm.ID()), Position{Revision: AnyRevision}, data)
	rev := at.Revision
	s.mu.Lock()
	defer s.mu.Unlock()
	after, taken := s.afterOwn[at]
	s.forgetOwnLocked(at)
	if err != nil {
		return none, err
	}
	s.traceAttempt(Attempt{N: 1, Base: AnyRevision, Updates: len(updates), Revision: rev})
	switch {
	case s.local.Load().Revision < rev:
		if err := s.readBackLocked(ctx, rev); err != nil {
			return none, err
		}
	case taken:
		return after, nil
	default:
		// The copy is past rev without having read the entry: a snapshot
		// covered it, or the log is another incarnation, whose entry at rev
		// this is. Reading to the log's end tells them apart.
		if _, err := s.fetchLocked(ctx, 0); err != nil {
			return none, err
		}
	}
	return s.local.Load().Value, nil
}

// forgetOwnLocked ends an UpdateUnconditionally whose entry is at at (zero
// if it failed): the state kept after it goes, and once no other is under
// way, those kept after any other entry of this synchronizer's.
func (s *Synchronizer[S]) forgetOwnLocked(at Position) {
	delete(s.afterOwn, at)
	if s.ownInFlight.Add(-1) == 0 {
		s.afterOwn = nil
	}
}

// Initialize writes init as the log's first entry if the log is empty, and
// otherwise loads the state the log holds: it never overwrites shared state.
func (s *Synchronizer[S]) Initialize(ctx context.Context, init InitialUpdate[S]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initializeLocked(ctx, init)
}

func (s *Synchronizer[S]) initializeLocked(ctx context.Context, init InitialUpdate[S]) error {
	s.listenEarlyLocked()
	if s.local.Load().initialized {
		return nil
	}
	data, err := s.codec.EncodeInitial(init)
	if err != nil {
		return err
	}
	// Most logs hold entries already: where the log ends costs less to ask
	// than an append the log refuses. A log that cannot say where it ends
	// (time ran out, the user may not ask) is not taken for an empty one;
	// a deleted one is, since the append creates it again.
	last, err := s.log.LastPosition(ctx)
	if err != nil && !errors.Is(err, ErrDeleted) {
		return err
	}
	if last.Revision > 0 {
		if _, err := s.fetchLocked(ctx, last.Revision); err != nil {
			return err
		}
		if s.local.Load().initialized {
			return nil
		}
		// Read to its end, the log holds no initial state (its entries
		// were removed, see ErrEmptied): as an empty log, it takes init
		// after them, saying so to copies older than the purge.
		last = s.local.Load().position()
	}
	purged := s.local.Load().purgedAt
	if last.Revision == 0 {
		purged = 0 // a new log (or one created again): no purge of its own
	}
	at, err := s.log.CompactAfter(PurgedContext(ctx, purged), last, data)
	if err == nil {
		rev := at.Revision
		s.local.Store(&local[S]{revisioned: revisioned[S]{Value: init.Create(rev), Revision: rev}, initialized: true, compactedAt: rev, id: at.ID, purgedAt: purged})
		return nil
	}
	if !errors.Is(err, ErrConflict) {
		return err
	}
	return s.ensureInitializedLocked(ctx)
}

// listenEarlyLocked starts hearing other writers' turns when the state is
// loaded, so that the first write knows who waits, unless the manager
// listens from its first write (turns.Options.FromFirstWrite) or the
// synchronizer is closed.
func (s *Synchronizer[S]) listenEarlyLocked() {
	if !s.life.isClosed() {
		s.cm.Loaded(s.log)
	}
}

// turnsCopy is what the contention manager needs of a write's
// synchronizer (turns.Copy).
type turnsCopy[S any] struct{ s *Synchronizer[S] }

func (c turnsCopy[S]) Lock()            { c.s.mu.Lock() }
func (c turnsCopy[S]) Unlock()          { c.s.mu.Unlock() }
func (c turnsCopy[S]) Revision() uint64 { return c.s.local.Load().Revision }

func (c turnsCopy[S]) CatchUp(ctx context.Context) error {
	_, err := c.s.fetchLocked(ctx, 0)
	return err
}

func (s *Synchronizer[S]) ensureInitializedLocked(ctx context.Context) error {
	s.listenEarlyLocked()
	if s.local.Load().initialized {
		return nil
	}
	if _, err := s.fetchLocked(ctx, 0); err != nil {
		return err
	}
	if cur := *s.local.Load(); !cur.initialized {
		return s.noStateLocked(cur) // emptied, say, by a read since the write began
	}
	return nil
}

// Compact writes a snapshot of the local state, made by snapshot, and drops
// the entries before it. Like a write, it lands only if the log is still at
// the local revision, catching up and retrying otherwise, until ctx ends.
func (s *Synchronizer[S]) Compact(ctx context.Context, snapshot func(state S) InitialUpdate[S]) error {
	return s.CompactIf(ctx, snapshot, nil)
}

// CompactIf is Compact that asks due, if not nil, before each try, of the
// copy as it then stands: a compaction a policy called for writes nothing
// once the policy no longer calls for it (another writer compacted while
// this one caught up, or the catch-up read an entry that carries calls).
// due runs under the synchronizer's lock: it may read the copy's figures
// (EntriesSinceCompaction, LastCarried), nothing more. With due, a copy
// dropped (the log was found deleted) is not compacted, nor loaded again.
func (s *Synchronizer[S]) CompactIf(ctx context.Context, snapshot func(state S) InitialUpdate[S], due func() bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if due != nil && s.local.Load().dropped {
		// Judged due before another call found the log deleted (each call
		// of a batch asks after its answer): nothing is left to compact,
		// and a load would find the log deleted again, once per call.
		return nil
	}
	return s.retryOnConflictLocked(ctx, func(int, time.Duration) error {
		s.letHandersReadLocked(ctx) // also after a catch-up that read such entries
		if due != nil && !due() {
			return nil
		}
		cur := *s.local.Load()
		data, err := s.codec.EncodeInitial(snapshot(cur.Value))
		if err != nil {
			return err
		}
		at, err := s.log.CompactAfter(PurgedContext(turns.SpeakerContext(ctx, s.cm.ID()), cur.purgedAt), cur.position(), data)
		if err != nil {
			return s.replacedLocked(ctx, err)
		}
		// The snapshot is the local state itself, so the copy stays valid
		// and moves to the snapshot's revision.
		s.combine.carried.appended(cur.Revision, at.Revision, at.ID)
		cur.Revision, cur.compactedAt, cur.id = at.Revision, at.Revision, at.ID
		s.local.Store(&cur)
		return nil
	}, nil)
}

// Follow keeps the local copy current in the background: it fetches at once,
// after every append to the log (Log.Notify), and every
// few seconds in case a notification was lost (say, while reconnecting).
// Fetch errors go to onError, if set. The returned function stops following
// and waits for the background work to end; Close does too.
func (s *Synchronizer[S]) Follow(onError func(error)) (stop func(), err error) {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default: // a fetch is already due; it will see this append too
		}
	}
	if s.life.isClosed() {
		return nil, errClosed
	}
	stopNotify, err := s.log.Notify(poke)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Drops from here on are news to this follower (see followDrops).
	drops := followDrops[S]{s: s, seen: s.drops.Load()}
	go func() {
		defer close(done)
		s.followLoop(ctx, kick, onError, drops)
	}()
	poke()
	end := func() {
		stopNotify()
		cancel()
		<-done
	}
	tracked, ok := s.life.track(end)
	if !ok { // closed meanwhile
		end()
		return nil, errClosed
	}
	return tracked, nil
}

// followLoop fetches at every kick, and every followPoll, until ctx ends.
// A notice can come before the log serves the entry it announces (a
// JetStream stream stores a message after its subscribers hear it), or for
// an append the log refused; so a kick that found nothing new is followed
// by a few more looks, soon and then less soon, before the poll takes over.
func (s *Synchronizer[S]) followLoop(ctx context.Context, kick <-chan struct{}, onError func(error), drops followDrops[S]) {
	poll := time.NewTicker(followPoll)
	defer poll.Stop()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	defer recheck.Stop()
	var delay time.Duration // of the pending look again; 0 when none is
	// An error is reported once, until the fetches succeed again or
	// fail otherwise: on a damaged log every append would repeat it.
	said := ""
	for {
		prompted := true
		select {
		case <-ctx.Done():
			return
		case <-kick:
			if delay == 0 {
				delay = followRecheckFirst
			}
		case <-recheck.C:
			delay *= 4
		case <-poll.C:
			prompted = false
		}
		before := s.revision()
		said = drops.tell(onError, said)
		fetchCtx, cancelFetch := context.WithTimeout(ctx, followFetchTimeout)
		err := s.Fetch(fetchCtx)
		cancelFetch()
		said = drops.fetched(err, said)
		switch {
		case !prompted:
		case err != nil || s.revision() != before || delay > followRecheckLast:
			delay = 0
			recheck.Stop()
		default:
			recheck.Reset(delay)
		}
		if err == nil || ctx.Err() != nil {
			said = ""
		} else if err.Error() != said && onError != nil {
			said = err.Error()
			onError(err)
		}
	}
}

// revision is the local copy's revision, 0 before any state.
func (s *Synchronizer[S]) revision() uint64 {
	_, rev := s.State()
	return rev
}

const (
	// followFetchTimeout bounds one background fetch.
	followFetchTimeout = 10 * time.Second
	// followPoll is how often a follower looks at the log unprompted.
	followPoll = 5 * time.Second
	// followRecheckFirst and followRecheckLast bound the looks again after
	// a notice that found nothing new: 1, 4, 16, 64 and 256 ms apart.
	followRecheckFirst = time.Millisecond
	followRecheckLast  = 256 * time.Millisecond
)
