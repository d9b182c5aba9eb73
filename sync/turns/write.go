package turns

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ownTurn is the turn this synchronizer holds, if any, across its writes:
// a waiter that got through keeps going before the others for up to
// TurnCommits back-to-back commits or TurnTime, so that a handoff, which
// costs the next writer a read of what the last one wrote, is paid once
// per turn rather than once per commit. Guarded by the contention's mu.
type ownTurn struct {
	held    bool
	since   uint64    // the age its words give
	said    time.Time // when it last announced
	started time.Time // when its first commit landed
	commits int       // commits made in the turn
	gen     int       // counts writes, so a late release knows it is late
}

// Copy is what a Write needs of its synchronizer: its lock, held around
// the write and released while the write holds back; the local copy's
// revision; and a catch-up, which reads the log to its end.
type Copy interface {
	sync.Locker
	Revision() uint64
	CatchUp(ctx context.Context) error
}

// Write is one conditional write's part in taking turns. Its methods are
// called with the synchronizer's lock held.
type Write struct {
	c          *Manager
	copy       Copy
	since      uint64        // its age: where the log was at its first try, or its turn's
	looping    bool          // it started right after this synchronizer's last commit
	once       bool          // it does not loop: it goes before looping waiters
	noTurns    bool          // it takes no turns (WithoutTurns, or no Announcer)
	prefetched bool          // it caught up while next in line
	freshen    bool          // it catches up before its first try
	lost       int           // tries lost in a row
	said       time.Time     // when it last announced its wait; zero if never
	saidSince  uint64        // the age it said then
	heldBack   time.Duration // in all
	lastHold   time.Duration // before the try under way
	longestTry time.Duration // how long its slowest try took

	// The claim of the waiter first in line, as this write judges it.
	first   string          // its id
	firstAt time.Time       // since when it is first
	grace   time.Duration   // how long it has to show an entry of its own
	earned  time.Duration   // how much of that its word about its tries earned it
	granted time.Duration   // all that waiters' words earned them in this write
	from    uint64          // the local revision then
	shownAt time.Time       // when an entry of its own was read; zero before
	voided  time.Duration   // time lost to claims that came to nothing
	passed  map[string]bool // waiters that had their turn before this write, or lost their claim
	// The claims of firsts that an older waiter displaced before they were
	// judged, and the ids that were first in this write, in order: a
	// displaced claim is judged when its displacer's would be.
	displaced []displacedClaim
	firsts    []string

	handing  *Handing // set when another writer may commit the write (Hands)
	handedTo string   // the writer it was handed to
}

// Handing is what a write that another writer may commit for it
// (combining, statesync.UpdateOp) gives HoldBack: while it holds back, it
// is handed to the writer it holds back for, which commits it with its own
// updates and answers; the write then reads the log as far as the answer
// says, to see.
type Handing struct {
	// Hand hands the write to the writer named to (Manager.Hand); the
	// channel gets the answer, nil for none.
	Hand func(ctx context.Context, to string) <-chan []byte
	// Answered looks at an answer, with the lock held: it reads the log
	// as far as the answer says, if that is not far, and reports whether
	// the local copy shows the write committed by another writer.
	Answered func(ctx context.Context, answer []byte) (committed bool, err error)
	// NotTaken, if set, is told, with the lock held, that no writer got the
	// write it handed (ErrNotTaken): nobody can commit it but its writer.
	NotTaken func()
}

// ErrCommitted is what HoldBack returns when another writer committed the
// write (Hands): it is done, and tries nothing itself.
var ErrCommitted = errors.New("another writer committed the write")

// Hands lets another writer commit w while it holds back: see Handing.
func (w *Write) Hands(h *Handing) {
	if !w.noTurns {
		w.handing = h
	}
}

// displacedClaim is the claim of a waiter that stopped being first,
// displaced by an older one, before it was judged.
type displacedClaim struct {
	id     string
	at     time.Time     // when it became first
	by     time.Time     // when it is judged: its grace's end, or a grace after its displacer's, the later
	from   uint64        // the local revision then
	earned time.Duration // what its word about its tries earned it
	next   int           // the index in firsts of the waiter that displaced it
}

// Start begins the part in taking turns of a write under ctx, on the
// synchronizer's copy of log: it listens first if it does not yet
// (FromFirstWrite), and continues or ends this synchronizer's turn.
func (c *Manager) Start(ctx context.Context, log any, cp Copy) *Write {
	c.listen(log)
	noTurns := Exempt(ctx)
	c.mu.Lock()
	looping := time.Since(c.landed) < c.opt.BackToBack
	w := &Write{c: c, copy: cp, since: cp.Revision(), looping: looping, once: !looping, noTurns: noTurns || c.announcer == nil}
	if w.noTurns {
		c.mu.Unlock()
		return w
	}
	t := &c.own
	t.gen++
	if t.held && w.looping {
		w.since, w.said = t.since, t.said
		c.mu.Unlock()
		return w
	}
	ended := c.endTurnLocked()
	c.mu.Unlock()
	c.sayDoneIf(ended)
	if !w.once {
		return w
	}
	if others, oneOffs := c.othersWait(); others && !oneOffs {
		// Looping writers take turns meanwhile, so a first try on this
		// copy would be lost to the holder's next write, and saying
		// `once` only then would cost the holder's write after that too.
		// It says it now, and catches up while the holder finishes the
		// write under way and hears it (freshenCopy). Where a one-off
		// write waits already, the write joins behind it as a loser does
		// (queueUp). A write that can be handed to the writer under way
		// is, first (handToLatest): that costs no word, and no turn.
		w.freshen = true
	}
	return w
}

// Tried records how long a try (an append, or a confirmation) took.
func (w *Write) Tried(d time.Duration) {
	w.longestTry = max(w.longestTry, d)
	w.c.tried(d)
}

// Lost records a try that another writer beat, with the log at current.
func (w *Write) Lost(current uint64) { w.c.lost(w, current) }

// End ends the write's part; landed says whether it landed.
func (w *Write) End(landed bool) {
	w.c.mu.Lock()
	w.c.carried = false
	w.c.mu.Unlock()
	w.c.endWrite(w, landed)
}

// EndCommitted ends the part of a write that another writer committed
// (ErrCommitted): it landed, but this writer holds no turn for it. Its
// next back-to-back write is handed at once (handToLatest); a wait it said
// stays said for that write, and with no such write within BackToBack it
// says done. A write that said `once` says done at once: the word was for
// this write alone, and the writers it goes before would wait for an entry
// of its own that never comes, for a claim's grace.
func (w *Write) EndCommitted() {
	c := w.c
	c.mu.Lock()
	c.carried = true
	c.landed = time.Now()
	gen := c.own.gen
	if w.once && !w.said.IsZero() && !w.noTurns {
		c.withdrawLocked()
		c.mu.Unlock()
		c.sayDoneIf(true)
		return
	}
	c.mu.Unlock()
	time.AfterFunc(c.opt.BackToBack, func() {
		c.mu.Lock()
		quiet := c.own.gen == gen && !c.own.held && c.mine != nil
		if quiet {
			c.mine = nil
		}
		c.mu.Unlock()
		c.sayDoneIf(quiet)
	})
}

// HeldBack is how long the write held back before the try under way.
func (w *Write) HeldBack() time.Duration { return w.lastHold }

// promoteAfter lost tries in a row make a looping write wait as one that
// does not loop: a write among looping writers taking turns loses up to
// about three (it announces after two, and may lose once more to a write
// already under way).
const promoteAfter = 4

// lost records a try of w that another writer beat, with the log at
// current: after AnnounceAfter lost appends in a row, w announces that it
// waits; a write that does not loop, at once while others wait, since it
// goes before the looping writers that beat it.
func (c *Manager) lost(w *Write, current uint64) {
	w.lost++
	if w.lost == 1 && w.said.IsZero() {
		// Its age is where the log was when it first tried, not where its
		// copy was: a copy that was old when the write began (a process
		// that writes once in a while) is no claim to go first.
		w.since = max(w.since, current)
	}
	if w.lost >= promoteAfter {
		// A looping write that keeps losing (its tries are slow, say, and
		// one-off writes keep landing first) goes with the one-off writes,
		// oldest first among them: their going first must not starve it.
		w.once = true
	}
	if w.noTurns {
		return
	}
	if others, _ := c.othersWait(); w.lost >= c.opt.AnnounceAfter || w.once && others {
		c.sayWaiting(w, time.Now())
	}
}

// othersWait: some other writer is heard waiting, or holding the turn its
// wait earned: writers take turns, and a write that does not loop would
// otherwise lose to the holder's back-to-back writes until the turn ends.
// oneOffs: some of them are one-off writes.
func (c *Manager) othersWait() (others, oneOffs bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for id, w := range c.waiting {
		if now.Before(c.staleAt(w)) && !c.ignored(id, now) {
			others, oneOffs = true, oneOffs || w.once
		}
	}
	return others, oneOffs
}

func (c *Manager) sayWaiting(w *Write, now time.Time) {
	w.said, w.saidSince = now, w.since
	c.mu.Lock()
	word := waitWord(c.id, w.since, max(w.longestTry, c.tryTime), w.once)
	c.mine = word
	a := c.announcer
	c.mu.Unlock()
	a.Announce(word) // a hint: a lost word costs only fairness
}

// endWrite ends w's part. A looping writer whose write waited and landed
// holds the turn for its next back-to-back writes, up to TurnCommits or
// TurnTime; otherwise a writer that announced a wait says it is done, so
// that the writers holding back for it go on.
func (c *Manager) endWrite(w *Write, landed bool) {
	c.mu.Lock()
	if landed {
		c.landed = time.Now()
	}
	if w.said.IsZero() || w.noTurns {
		c.mu.Unlock()
		return
	}
	t := &c.own
	if !landed || !w.looping {
		c.withdrawLocked()
		c.mu.Unlock()
		c.sayDoneIf(true)
		return
	}
	if !t.held || t.since != w.since {
		*t = ownTurn{held: true, since: w.since, started: c.landed, gen: t.gen}
	}
	t.said = w.said
	t.commits++
	commits, length := c.turnLocked()
	if t.commits >= commits || c.landed.Sub(t.started) >= length {
		ended := c.endTurnLocked()
		c.mu.Unlock()
		c.sayDoneIf(ended)
		return
	}
	gen := t.gen
	c.mu.Unlock()
	time.AfterFunc(c.opt.BackToBack, func() {
		c.mu.Lock()
		ended := c.own.gen == gen && c.endTurnLocked()
		c.mu.Unlock()
		c.sayDoneIf(ended)
	})
}

// withdrawLocked forgets this synchronizer's turn and word: the caller
// then says done, once c.mu is free.
func (c *Manager) withdrawLocked() {
	c.own = ownTurn{gen: c.own.gen}
	c.mine = nil
}

// endTurnLocked gives up this synchronizer's turn, if it holds one, and
// reports whether it did: the caller then says done, once c.mu is free.
func (c *Manager) endTurnLocked() bool {
	t := &c.own
	if !t.held {
		return false
	}
	*t = ownTurn{gen: t.gen}
	c.mine = nil
	return true
}

// Close stops hearing other writers for good, saying done first if this
// synchronizer holds a turn, so that nobody waits for it. Writes then try
// at once.
func (c *Manager) Close() {
	c.mu.Lock()
	ended := c.endTurnLocked()
	a, stop := c.announcer, c.unlisten
	c.announcer, c.unlisten, c.closed = nil, nil, true
	c.mu.Unlock()
	if ended && a != nil {
		a.Announce(doneWord(c.id)) // a hint, as sayWaiting's
	}
	if stop != nil {
		stop()
	}
}

// sayDoneIf tells the writers holding back for this one that it is done.
func (c *Manager) sayDoneIf(ended bool) {
	if a := c.announcerOf(); ended && a != nil {
		a.Announce(doneWord(c.id)) // a hint, as sayWaiting's
	}
}

// HoldBack is called before each try: it waits while a writer older than
// the write waits for its turn, until that one says it is done, loses its
// claim, goes stale, ctx ends, or the write has held back for MaxHoldBack
// in all. It waits with the synchronizer's lock released. A write that
// holds back is waiting too: it announces so, and repeats its word
// meanwhile. It uses the wait to catch up, where that saves the others
// from waiting while it does so at its turn: before it joins the queue if
// its copy is known to be behind, and once when it is next in line. A
// write that waited catches up once more before it goes: the writers
// before it took their turns meanwhile, so a try on its copy would be lost
// for sure, and a read costs the same round trips as a lost try and its
// catch-up, without the try.
func (w *Write) HoldBack(ctx context.Context) (err error) {
	if w.noTurns {
		return nil
	}
	c := w.c
	if err := w.handToLatest(ctx); err != nil {
		return err
	}
	if w.freshen {
		c.sayWaiting(w, time.Now())
		if err := w.freshenCopy(ctx); err != nil {
			return err
		}
	}
	before, waited := w.heldBack, false
	defer func() {
		w.lastHold = w.heldBack - before
		if waited && err == nil {
			err = w.copy.CatchUp(ctx)
		}
	}()
	for w.heldBack < c.opt.MaxHoldBack+w.granted && w.voided < 2*c.grace() {
		now := time.Now()
		ahead, first, stale, changed := c.ahead(w, now)
		if ahead == 0 {
			return nil
		}
		judgeBy, again, err := w.judgeClaim(ctx, first, now)
		if err != nil || again {
			if err != nil {
				return err
			}
			continue
		}
		if err := w.queueUp(ctx, ahead, now); err != nil {
			return err
		}
		wake := earliest(stale, judgeBy, now.Add(c.opt.MaxHoldBack+w.granted-w.heldBack), w.said.Add(c.opt.Heartbeat)).Sub(now)
		_, _, err = w.sleepUnlocked(ctx, wake, changed, nil)
		if err != nil {
			// Not the log's silence: this write was waiting its turn.
			return &ContendedError{HeldBack: w.heldBack + time.Since(now), Err: err}
		}
		waited = true
		w.heldBack += time.Since(now)
	}
	return nil
}

// freshenCopy catches up before the first try of a one-off write that
// said `once` at its start (Start). The write's age is then where the log
// is, as a loser's is where the log was at its first try: its copy's
// revision, said before, is no claim to go before other one-off writes
// (queueUp says the new age if the write holds back). Time run out here
// was spent on others' turns: the write says so, not that the log is
// silent.
func (w *Write) freshenCopy(ctx context.Context) error {
	w.freshen = false
	began := time.Now()
	if err := w.copy.CatchUp(ctx); err != nil {
		if ctx.Err() != nil {
			return &ContendedError{HeldBack: w.heldBack + time.Since(began), Err: err}
		}
		return err
	}
	w.heldBack += time.Since(began)
	w.since = max(w.since, w.copy.Revision())
	return nil
}

// queueUp announces w's wait and catches up where that saves time (see
// HoldBack).
func (w *Write) queueUp(ctx context.Context, ahead int, now time.Time) error {
	c := w.c
	if w.said.IsZero() {
		// Join the queue behind the waiters heard: an old copy is no
		// claim to go first. A waiter's age says the log has reached
		// it; a copy short of that is behind, so catch up first. Then
		// the copy is at every honest age heard, or past it: an age
		// still past it is made up, and is not taken up (the write
		// would go last, and its words would spread that age to the
		// writers that hear them, leaving ties broken by id).
		if w.copy.Revision() < c.newest() {
			if err := w.copy.CatchUp(ctx); err != nil {
				return err
			}
		}
		w.since = max(w.since, w.copy.Revision())
	} else if ahead == 1 && !w.prefetched {
		w.prefetched = true
		if err := w.copy.CatchUp(ctx); err != nil {
			return err
		}
	}
	if w.said.IsZero() || now.Sub(w.said) >= c.opt.Heartbeat || w.saidSince != w.since {
		c.sayWaiting(w, now)
	}
	return nil
}

// judgeClaim judges the claim of the waiter w holds back for: it must show
// an entry of its own within its grace (see claimGrace) of becoming first,
// and then goes before w for one turn (TurnTime). It returns when to judge
// again, or again=true when first no longer goes before w.
func (w *Write) judgeClaim(ctx context.Context, waiter waiterID, now time.Time) (judgeBy time.Time, again bool, err error) {
	c, first := w.c, waiter.id
	if judged, err := w.judgeDisplaced(ctx, now); err != nil || judged {
		return now, judged, err
	}
	if w.first != first {
		if err := w.judgeDeparted(ctx, now); err != nil {
			return now, false, err
		}
		w.first, w.firstAt, w.from, w.shownAt = first, now, w.copy.Revision(), time.Time{}
		w.grace, w.earned = c.claimGrace(waiter.try)
		// Claims are not added up: a name that goes first with each word
		// would otherwise earn grace after grace, never judged.
		w.granted = max(w.granted, w.earned)
		if n := len(w.displaced); n > 0 && w.displaced[n-1].next == len(w.firsts) {
			// The claim it displaced is judged when its own would be,
			// and a grace later: an honest waiter displaced by a made-up
			// name holds back for it until its own writes void it.
			base := c.grace()
			w.displaced[n-1].by = later(w.displaced[n-1].by, now.Add(max(w.grace, base)+base))
		}
		w.firsts = append(w.firsts, first)
	}
	defer func() {
		if len(w.displaced) > 0 && !again && err == nil {
			judgeBy = earliest(judgeBy, w.displacedBy())
		}
	}()
	if !w.shownAt.IsZero() {
		if judgeBy = w.shownAt.Add(c.opt.TurnTime); now.Before(judgeBy) {
			return judgeBy, false, nil
		}
		w.pass(first) // its turn before w is over
		return judgeBy, true, nil
	}
	if judgeBy = w.firstAt.Add(max(w.grace, c.grace())); now.Before(judgeBy) {
		return judgeBy, false, nil
	}
	if err := w.copy.CatchUp(ctx); err != nil {
		return judgeBy, false, err
	}
	shown := c.wroteAfter(first, w.from)
	c.judged(w.earned, shown)
	if shown {
		w.shownAt = now
		return now.Add(c.opt.TurnTime), false, nil
	}
	c.voidClaim(first)
	w.pass(first)
	w.voided += now.Sub(w.firstAt)
	return judgeBy, true, nil
}

// judgeDeparted judges the claim of the waiter that was first, if it is
// gone before its claim was judged (stale, done, or forgotten): a name said
// once and never again must not leave its grace unjudged, or each new one
// would cost its full grace.
func (w *Write) judgeDeparted(ctx context.Context, now time.Time) error {
	c := w.c
	if w.first == "" || !w.shownAt.IsZero() || w.passed[w.first] {
		return nil
	}
	if c.isWaiting(w.first) {
		w.displace(now)
		return nil
	}
	if err := w.copy.CatchUp(ctx); err != nil {
		return err
	}
	shown := c.wroteAfter(w.first, w.from)
	c.judged(w.earned, shown)
	if !shown {
		c.voidClaim(w.first)
		w.voided += now.Sub(w.firstAt)
	}
	w.pass(w.first)
	return nil
}

// maxDisplaced bounds the displaced claims a write keeps to judge: honest
// waiters displace each other a few times in a write, and the claims of
// made-up names past the bound count as come to nothing at once.
const maxDisplaced = 32

// displace keeps the claim of the waiter that was first, still waiting
// but displaced by an older one before its claim was judged, to judge it
// when the claim of the one that displaced it would be. Else a name that
// sorts first with each word (made up, since 0) would be first a moment
// each, never judged, and every write would hold back for the whole of
// MaxHoldBack and what the words earned, however often it happened.
func (w *Write) displace(now time.Time) {
	if len(w.displaced) >= maxDisplaced {
		// Come to nothing for trust too: else a flood of made-up names
		// that overflows the bound would cost every write its full
		// grace, as if none of them had been judged.
		w.c.judged(w.earned, false)
		w.c.mu.Lock()
		w.c.overflowed, w.c.learned = true, true
		w.c.noteMadeUpLocked(w.first, now)
		w.c.mu.Unlock()
		w.voided += now.Sub(w.firstAt)
		w.pass(w.first)
		return
	}
	w.displaced = append(w.displaced, displacedClaim{id: w.first, at: w.firstAt, by: w.firstAt.Add(max(w.grace, w.c.grace())),
		from: w.from, earned: w.earned, next: len(w.firsts)})
}

// judgeDisplaced judges the displaced claims whose time has come, with one
// catch-up: a claim came to something if the log shows an entry, since
// its waiter became first, of it or of a waiter that was first after it
// (an honest waiter displaced by an older one waits for that one). It
// reports whether it voided any: what is ahead of w changed.
func (w *Write) judgeDisplaced(ctx context.Context, now time.Time) (voided bool, err error) {
	if len(w.displaced) == 0 || now.Before(w.displacedBy()) {
		return false, nil
	}
	c := w.c
	if err := w.copy.CatchUp(ctx); err != nil {
		return false, err
	}
	keep := w.displaced[:0]
	for _, d := range w.displaced {
		if now.Before(d.by) {
			keep = append(keep, d)
			continue
		}
		shown := c.wroteAfter(d.id, d.from)
		for _, id := range w.firsts[min(d.next, len(w.firsts)):] {
			shown = shown || c.wroteAfter(id, d.from)
		}
		c.judged(d.earned, shown)
		if !shown {
			c.voidClaim(d.id)
			w.pass(d.id)
			w.voided += now.Sub(d.at)
			voided = true
		}
	}
	w.displaced = keep
	return voided, nil
}

// displacedBy is when the first displaced claim is due.
func (w *Write) displacedBy() time.Time {
	by := w.displaced[0].by
	for _, d := range w.displaced[1:] {
		by = earliest(by, d.by)
	}
	return by
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (w *Write) pass(id string) {
	if w.passed == nil {
		w.passed = map[string]bool{}
	}
	w.passed[id] = true
}

// sleepUnlocked waits, with the synchronizer's lock released, for d,
// changed, an answer or ctx's end.
func (w *Write) sleepUnlocked(ctx context.Context, d time.Duration, changed <-chan struct{}, answer <-chan []byte) (a []byte, answered bool, err error) {
	w.copy.Unlock()
	defer w.copy.Lock()
	timer := time.NewTimer(max(d, time.Millisecond))
	defer timer.Stop()
	select {
	case <-changed:
	case got, ok := <-answer:
		if !ok {
			return nil, false, ErrNotTaken
		}
		return got, true, nil
	case <-timer.C:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return nil, false, nil
}

// handWait bounds the wait for the answer of the writer a write was
// handed to: past it, the write goes on as one that was not.
const handWait = 50 * time.Millisecond

// handAfter lost tries in a row show contention: one lost try is as often
// a copy that was stale (a shell left open), which a catch-up mends, and
// whose write is best made by its own writer, as the person expects.
const handAfter = 2

// handToLatest hands w, if it lost handAfter tries, is a one-off write among
// looping writers (heard waiting, Start, or seen writing back to back in
// the last read), or its writer's last write was committed by another, to the writer of the newest entry read: that one writes now,
// and most likely again at once (or carries handed calls on their own). It waits for the answer up to
// handWait, and returns ErrCommitted if the log shows w committed.
func (w *Write) handToLatest(ctx context.Context) error {
	c := w.c
	c.mu.Lock()
	to, carried, loops := c.latest, c.carried, c.latestLoops
	c.mu.Unlock()
	if w.handing == nil || w.handedTo != "" || to == "" || to == c.id || w.lost < handAfter && !w.freshen && !(carried && w.looping) && !(w.once && loops) {
		return nil
	}
	w.handedTo = to
	hctx, stop := context.WithTimeout(ctx, handWait)
	defer stop()
	answer := w.handing.Hand(hctx, to)
	if answer == nil {
		return nil
	}
	began := time.Now()
	a, answered, err := w.sleepUnlocked(hctx, handWait, nil, answer)
	w.heldBack += time.Since(began)
	if errors.Is(err, ErrNotTaken) {
		if w.handing.NotTaken != nil {
			w.handing.NotTaken()
		}
		return nil
	}
	if err != nil && ctx.Err() != nil {
		return &ContendedError{HeldBack: w.heldBack, Err: ctx.Err()}
	}
	if !answered {
		return nil
	}
	committed, err := w.handing.Answered(ctx, a)
	if err == nil && committed {
		err = ErrCommitted
	}
	return err
}

func earliest(first time.Time, rest ...time.Time) time.Time {
	for _, t := range rest {
		if t.Before(first) {
			first = t
		}
	}
	return first
}
