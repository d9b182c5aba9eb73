package statesync

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Group commit: UpdateState calls that arrive while another call's append is
// in flight queue up, and the next of them to run takes the whole queue as
// one batch: it runs their functions in arrival order, each on the state its
// predecessors produced, and appends all their updates as one conditional
// entry. A conflict re-runs the batch; each caller gets its own result. A
// lone caller finds no append in flight and runs at once, on its own
// goroutine: nothing waits for a batch to fill.

// request is one UpdateState call.
type request[S any] struct {
	ctx context.Context
	// run calls the caller's function and keeps its result in the caller's
	// frame; it returns the function's updates.
	run   func(S) []Update[S]
	err   error         // the call's outcome, once done is closed
	after revisioned[S] // the local state just after the call's entry, on success
	done  chan struct{} // closed when the call has its outcome
	turn  chan struct{} // closed when the call is to run the next batch
	since time.Time     // when it queued
	op    *opCall       // the call as data (UpdateOp), or nil
	// carryOnly: the request has no call of its own; it appends the calls
	// other writers handed (carrySoon).
	carryOnly bool
	// committed: another writer's entry carried the call (settleLocked),
	// with carriedUpdates of its updates, and after is the state just
	// after them there. Under the synchronizer's mu.
	committed      bool
	carriedUpdates int

	// Guarded by the queue's mu.
	promoted bool // turn is closed
	taken    bool // a batch holds the request
}

// queue holds the calls waiting for the batch in flight to finish.
type queue[S any] struct {
	mu      sync.Mutex
	pending []*request[S]
	leading bool // some call runs a batch, or has been given the turn to
}

// enqueue adds r and says whether r runs the next batch itself at once.
func (q *queue[S]) enqueue(r *request[S]) (lead bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, r)
	if q.leading {
		return false
	}
	q.leading = true
	return true
}

// take empties the queue into a batch.
func (q *queue[S]) take() []*request[S] {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.pending
	q.pending = nil
	for _, r := range batch {
		r.taken = true
	}
	return batch
}

// handOff gives the turn to the first call that queued up while the batch
// before ran, if any.
func (q *queue[S]) handOff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.leading = false
		return
	}
	next := q.pending[0]
	next.promoted = true
	close(next.turn)
}

// withdraw removes r, whose context ended, if no batch has it yet and it has
// not been given the turn; then nothing of it was tried.
func (q *queue[S]) withdraw(r *request[S]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.taken || r.promoted {
		return false
	}
	q.pending = slices.DeleteFunc(q.pending, func(p *request[S]) bool { return p == r })
	return true
}

type queuedKey struct{}

// WithQueued returns a context under which an UpdateState call calls queued,
// on the caller's goroutine, as soon as the call has its place in the queue
// of group commit, before it runs or waits. A caller that starts each call
// only once the one before it is queued (a script's lines) has them run in
// that order, each on the state of those before it, as it would one after
// another, while their entries still group. A call refused before it queues
// (its context already ended, say), or made turns.Without (it does not
// queue), never calls queued.
func WithQueued(ctx context.Context, queued func()) context.Context {
	return context.WithValue(ctx, queuedKey{}, queued)
}

// submit runs r, in a batch of its own or with the calls queued beside it,
// and returns once r has its outcome.
func (s *Synchronizer[S]) submit(r *request[S]) {
	if turns.Exempt(r.ctx) {
		// Not behind a batch that holds back for turns: on its own.
		s.mu.Lock()
		defer s.mu.Unlock()
		s.runBatchLocked([]*request[S]{r})
		return
	}
	r.since = time.Now()
	lead := s.queue.enqueue(r)
	if queued, ok := r.ctx.Value(queuedKey{}).(func()); ok {
		queued()
	}
	if lead {
		s.lead(r)
		return
	}
	ctxDone := r.ctx.Done()
	for {
		select {
		case <-r.done:
			return
		case <-r.turn:
			s.lead(r)
			return
		case <-ctxDone:
			if s.queue.withdraw(r) {
				r.err = r.ctx.Err()
				if s.holdingBack.Load() > 0 {
					// Queued behind a write that holds back for other
					// writers' turns: the log is answering.
					r.err = &turns.ContendedError{HeldBack: time.Since(r.since), Err: r.err}
				}
				return
			}
			// A batch holds r, or r has the turn: see it through. A batch
			// lets r go at its next try (see runBatchLocked).
			ctxDone = nil
		}
	}
}

// lead runs the next batch, which holds self. A batch of one runs on the
// caller's goroutine; a larger one runs on its own, so that a caller whose
// context ends can leave it without stopping the others.
func (s *Synchronizer[S]) lead(self *request[S]) {
	s.mu.Lock()
	batch := s.queue.take()
	run := func() {
		// Deferred, so that a caller that recovers from a panic in its
		// function leaves the synchronizer usable.
		defer s.queue.handOff()
		defer s.mu.Unlock()
		s.runBatchLocked(batch)
	}
	if len(batch) == 1 {
		run()
		return
	}
	go run()
	<-self.done
}

// runBatchLocked commits the batch's updates as one conditional append,
// retrying on conflict, and gives each call its outcome. Before each try
// after the first, the calls whose context has ended leave the batch with
// what their own write would have got (a ContendedError if they lost); the
// others go on. If every call's context has ended, the try runs anyway and
// fails as a lone write would.
func (s *Synchronizer[S]) runBatchLocked(batch []*request[S]) {
	ctx, stop := batchContext(batch)
	defer stop()
	if err := s.recreateLocked(ctx, batch); err != nil {
		s.endLocked(batch, ctx, 0, err, s.localAfter)
		return
	}
	b := &batchTry[S]{s: s, members: batch}
	var handing *turns.Handing
	if len(batch) == 1 {
		handing = s.handing(batch[0])
	}
	lost, err := s.retryLocked(ctx, func(attempt int, heldBack time.Duration) error {
		return b.try(ctx, attempt, heldBack)
	}, func(conflict *ConflictError, caughtUp uint64, stopped bool) {
		b.attempt.Conflict, b.attempt.CaughtUp, b.attempt.Stopped = conflict, caughtUp, stopped
		if !batch[0].carryOnly {
			s.traceAttempt(b.attempt)
		}
	}, handing)
	members := b.members
	if err != nil && len(members) == 1 && members[0].committed {
		// The read after a lost try found another writer's entry carrying
		// the call, and then the time ran out: the call is done.
		err = turns.ErrCommitted
	}
	switch {
	case errors.Is(err, turns.ErrCommitted):
		m := members[0]
		delete(s.combine.mine, m.op.id)
		s.traceAttempt(Attempt{N: lost + 1, Base: m.op.from, Updates: m.carriedUpdates, Revision: m.after.Revision, Carried: true})
		close(m.done)
		return
	case err == nil && batch[0].carryOnly:
		// Others' writes, which their writers trace.
	case err == nil:
		s.traceAttempt(b.attempt)
	case len(members) > 1 && b.attempt.Updates > 0 && refusedForUpdates(err):
		// The combined entry was refused for what one call's updates are
		// (say, one does not encode, or together they are too large): give
		// each call its own try, and its own answer.
		for _, m := range members {
			s.runBatchLocked([]*request[S]{m})
		}
		return
	case len(members) > 1 && s.goesOnAfterLocked(err):
		// The first call found the log deleted, or created again: it says
		// so and writes nothing; the calls after it run as they would
		// after its answer, on the log created again or the copy reloaded.
		s.endLocked(members[:1], ctx, lost, err, s.localAfter)
		s.runBatchLocked(members[1:])
		return
	}
	s.endLocked(members, ctx, lost, err, s.afterEach(members, b.base, b.updates, b.ends, b.attempt.Revision, b.theirs))
}

// localAfter is the local copy, as the state after any member's updates.
func (s *Synchronizer[S]) localAfter(int) revisioned[S] { return s.local.Load().revisioned }

// endLocked gives each member its outcome, err (the batch's), and the state
// after(i) just after its updates.
func (s *Synchronizer[S]) endLocked(members []*request[S], ctx context.Context, lost int, err error, after func(i int) revisioned[S]) {
	for i, m := range members {
		m.err = memberError(m, ctx, lost, err)
		if m.op != nil {
			m.err = s.mayStillLandLocked(m, m.err)
		}
		m.after = after(i)
		close(m.done)
	}
}

// recreateLocked creates the log again (WithRecreate) for a batch whose
// copy was dropped, by the call before it, which found the log deleted
// while the batch's calls waited behind it and said so: they are the
// writes after that answer. A batch that only carries others' calls
// creates nothing, nor does a write that takes no turns (a lease's expiry,
// made in the background, which runs alone): nobody asked it to.
func (s *Synchronizer[S]) recreateLocked(ctx context.Context, batch []*request[S]) error {
	if s.recreate == nil || !s.local.Load().dropped || batch[0].carryOnly || turns.Exempt(batch[0].ctx) {
		return nil
	}
	return s.initializeLocked(ctx, s.recreate)
}

// goesOnAfterLocked: err, a batch's, found the log deleted and the calls
// after the first can create it again (WithRecreate), or found it created
// again and the copy is reloaded.
func (s *Synchronizer[S]) goesOnAfterLocked(err error) bool {
	cur := s.local.Load()
	return errors.Is(err, ErrDeleted) && cur.dropped && s.recreate != nil ||
		errors.Is(err, ErrReplaced) && cur.initialized
}

// batchTry is a batch's tries, and what the last one did.
type batchTry[S any] struct {
	s       *Synchronizer[S]
	members []*request[S]
	attempt Attempt
	base    local[S] // the state the last try ran the calls on
	updates []Update[S]
	ends    []int // where each member's updates end in updates
	theirs  bool  // the entry carries other writers' calls too
}

// try runs the members' calls on the local copy, with the calls other
// writers handed that the entry may carry, and appends their updates.
func (b *batchTry[S]) try(ctx context.Context, attempt int, heldBack time.Duration) error {
	s := b.s
	b.members = s.leaveEnded(b.members, attempt-1)
	members := b.members
	if attempt == 1 && !members[0].carryOnly {
		s.awaitHandsLocked(ctx)
	}
	b.base = *s.local.Load()
	cur := b.base
	if len(members) == 1 && members[0].committed {
		return turns.ErrCommitted
	}
	if err := s.readyOpsLocked(ctx, members, cur.Revision); err != nil {
		return err
	}
	b.updates, b.ends = runAll(members, cur)
	carried := handedOut(members, b.ends)
	more, others := s.carryLocked(cur, members, b.updates)
	b.attempt = Attempt{N: attempt, Base: cur.Revision, Updates: len(b.updates) + len(more), HeldBack: heldBack}
	if len(b.updates)+len(more) == 0 {
		if len(members) == 1 && members[0].carryOnly {
			return nil // the calls it was to carry landed, or can land no more
		}
		return s.confirmCurrentLocked(ctx, cur)
	}
	var err error
	b.attempt.Revision, err = s.commitLocked(ctx, cur, slices.Concat(b.updates, more), carried, others)
	if errors.Is(err, ErrTooLarge) && len(others) > 0 {
		// Too large with the calls of others: without them.
		b.attempt.Updates = len(b.updates)
		b.attempt.Revision, err = s.commitLocked(ctx, cur, b.updates, carried, nil)
		others = nil
	}
	b.theirs = len(others) > 0
	return err
}

// afterEach gives the state just after each member's updates, once the
// batch's entry landed at rev on base: the local copy as it stands after the
// batch, for all but the last, would show the updates of the calls after
// them. A timed update is applied at the time the log stored the entry (read
// back with it); if the read-back did not see the entry (a snapshot covered
// it), every member gets the local copy.
func (s *Synchronizer[S]) afterEach(members []*request[S], base local[S], updates []Update[S], ends []int, rev uint64, theirs bool) func(i int) revisioned[S] {
	whole := s.local.Load().revisioned
	if len(members) == 1 && !theirs || rev == 0 || anyTimed(updates) && s.readBackAt.IsZero() {
		return func(int) revisioned[S] { return whole }
	}
	states := make([]revisioned[S], len(members))
	state, from := base.Value, 0
	for i := range members {
		for _, u := range updates[from:ends[i]] {
			state = applyOne(state, u, rev, s.readBackAt)
		}
		states[i], from = revisioned[S]{Revision: rev, Value: state}, ends[i]
	}
	if !theirs {
		states[len(states)-1] = whole
	}
	return func(i int) revisioned[S] { return states[i] }
}

// refusedForUpdates: err refused the batch's entry for what its updates
// are (one does not encode, or together they are too large), which each
// call alone may not be. Any other error is the batch's as a whole: a try
// per call after it would write what the batch found it must not (into a
// log deleted or created again, or purged, since the copy was reloaded),
// or ask again a log that did not answer, or whose append may have landed.
func refusedForUpdates(err error) bool {
	var refused *encodeError
	return errors.As(err, &refused) || errors.Is(err, ErrTooLarge)
}

// encodeError is the codec's refusal of an entry's updates.
type encodeError struct{ err error }

func (e *encodeError) Error() string { return e.err.Error() }
func (e *encodeError) Unwrap() error { return e.err }

// leaveEnded lets the calls whose context has ended leave the batch, as long
// as one call is still waiting; lost is how many tries they lost.
func (s *Synchronizer[S]) leaveEnded(members []*request[S], lost int) []*request[S] {
	if len(members) == 1 || !slices.ContainsFunc(members, func(m *request[S]) bool { return m.ctx.Err() != nil }) {
		return members
	}
	if !slices.ContainsFunc(members, func(m *request[S]) bool { return m.ctx.Err() == nil }) {
		return members // all are done: the try fails on the batch's context
	}
	var stay []*request[S]
	for _, m := range members {
		if m.ctx.Err() == nil {
			stay = append(stay, m)
			continue
		}
		m.err = gaveUp(m.ctx, lost, m.ctx.Err())
		close(m.done)
	}
	return stay
}

// runAll runs each call's function on the state its predecessors' updates
// produce, as of the revision the entry will land at, and returns all the
// updates in order and where each call's end. Timed updates are applied
// at the local clock's time: the entry's own time is not known before it
// lands, and it alone decides what they do (each call's decision is only
// as good as that estimate, as a decision on a stale copy is).
func runAll[S any](members []*request[S], cur local[S]) (all []Update[S], ends []int) {
	if len(members) == 1 {
		all = members[0].run(cur.Value)
		return all, []int{len(all)}
	}
	state, now := cur.Value, time.Now()
	for i, m := range members {
		updates := m.run(state)
		all = append(all, updates...)
		ends = append(ends, len(all))
		if i < len(members)-1 {
			for _, u := range updates {
				state = applyOne(state, u, cur.Revision+1, now)
			}
		}
	}
	return all, ends
}

// memberError is a call's share of the batch's outcome. When the batch's
// context ended because every call's did, each call sees its own context's
// error (a deadline stays a deadline).
func memberError[S any](m *request[S], batchCtx context.Context, lost int, err error) error {
	if err == nil {
		return nil
	}
	if batchCtx != m.ctx && m.ctx.Err() != nil && errors.Is(err, context.Canceled) && !errors.Is(err, ErrUnknownOutcome) {
		if contended := (*turns.ContendedError)(nil); errors.As(err, &contended) {
			// Held back for turns until every call's time was up: say
			// that, with the call's own error and all the time it waited.
			held := contended.HeldBack
			if contended.Lost == 0 && !m.since.IsZero() {
				held = max(held, time.Since(m.since))
			}
			return &turns.ContendedError{Lost: contended.Lost, HeldBack: held, Err: m.ctx.Err()}
		}
		err = m.ctx.Err()
	}
	return gaveUp(m.ctx, lost, err)
}

// batchContext is the context a batch's I/O runs under: a lone call's own,
// or one that ends once every call's context has ended.
func batchContext[S any](batch []*request[S]) (context.Context, func()) {
	if len(batch) == 1 {
		return batch[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, r := range batch {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
