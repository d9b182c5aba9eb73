package statesync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Contention management: writers take turns once one keeps losing.
//
// A writer that has just won is already current, so its next conditional
// append leaves before a loser has caught up: left alone, in a closed loop
// of back-to-back writes one writer wins hundreds of times in a row. The
// log cannot help (a loser writes nothing to it), so a loser speaks up
// outside it, on the log's Announcer: after AnnounceAfter lost tries in a
// row it announces that it is waiting, and since which revision (the base
// of its first try). Every writer that hears it holds back its next try
// while a waiter that started before it has not said it is done; among
// waiters the oldest goes first, ties broken by writer id. That is the
// Greedy contention manager of the STM literature (the oldest transaction
// wins), with its ages taken from the log rather than from clocks.
//
// The words are hints only, and anyone may say them. Every append stays
// conditional on the writer's copy being the latest, so a lost, late or
// forged word can make a writer wait or lose, never write on a stale copy.
// And a word alone holds nobody back for long: each entry records who
// wrote it (the speaker, see Speaker), and the waiter first in line must
// show an entry of its own in the log within ClaimGrace (longer where
// tries are slow), or it loses its claim and its words are ignored until
// the log shows one. Each waiter
// goes before a given write once, for one turn, and a write gives up
// holding back once claims that came to nothing have cost it twice
// that grace, or after MaxHoldBack in all. The wait itself holds no lock:
// reads, watches and unconditional writes of the process go on meanwhile,
// and writes that must land at a time (WithoutTurns) take no turns at all.
//
// A writer alone never hears a word and never waits; writers that pause
// between writes, as people do, rarely lose twice in a row.

// TurnOptions tunes how writers take turns. A zero field takes its default.
type TurnOptions struct {
	// AnnounceAfter is how many tries in a row a write loses before its
	// writer announces that it is waiting (default 2).
	AnnounceAfter int
	// StaleAfter: a waiter not heard from for this long is forgotten (it
	// may have died, or its "done" was lost); waiters that hold back repeat
	// their word every Heartbeat (defaults 250 ms, 80 ms).
	StaleAfter, Heartbeat time.Duration
	// MaxHoldBack bounds the time one write spends holding back (1 s).
	MaxHoldBack time.Duration
	// BackToBack: a write that starts later than this after its
	// synchronizer's last commit is not part of a closed loop of writes; it
	// never keeps a turn, and a turn is given up once this passes with no
	// write (10 ms).
	BackToBack time.Duration
	// TurnCommits and TurnTime bound one turn: a waiter that got through
	// keeps going before the others for that many back-to-back commits or
	// that long, whichever comes first (32, 40 ms).
	TurnCommits int
	TurnTime    time.Duration
	// ClaimGrace is how long the waiter first in line has at least to show
	// an entry of its own in the log before it loses its claim (50 ms); ten
	// times the time a try takes, where that is longer.
	ClaimGrace time.Duration
}

// WithTurnOptions tunes the synchronizer's turns.
func WithTurnOptions(t TurnOptions) Option { return func(o *options) { o.turns = t } }

func (t TurnOptions) withDefaults() TurnOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if t.AnnounceAfter == 0 {
		t.AnnounceAfter = 2
	}
	if t.TurnCommits == 0 {
		t.TurnCommits = 32
	}
	def(&t.StaleAfter, 250*time.Millisecond)
	def(&t.Heartbeat, 80*time.Millisecond)
	def(&t.MaxHoldBack, time.Second)
	def(&t.BackToBack, 10*time.Millisecond)
	def(&t.TurnTime, 40*time.Millisecond)
	def(&t.ClaimGrace, 50*time.Millisecond)
	return t
}

type speakerKey struct{}

// SpeakerContext is ctx carrying id, the name an append's writer goes by
// in the words of turns (see Speaker).
func SpeakerContext(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, speakerKey{}, id)
}

// Speaker is the id of the writer appending under ctx, as its words name
// it, or "". A log that implements Announcer records it with the entry
// (Entry.Speaker), so that readers can tell a waiter that writes from one
// that only talks.
func Speaker(ctx context.Context) string {
	id, _ := ctx.Value(speakerKey{}).(string)
	return id
}

type withoutTurnsKey struct{}

// WithoutTurns marks a write as one that must land when it is made (a
// lease's expiry, whose entry's time decides what it does): it never holds
// back for other writers' turns, nor queues behind writes that do.
func WithoutTurns(ctx context.Context) context.Context {
	return context.WithValue(ctx, withoutTurnsKey{}, true)
}

func takesNoTurns(ctx context.Context) bool { return ctx.Value(withoutTurnsKey{}) != nil }

// contention is the contention manager of one synchronizer: what it hears
// of other writers' waits, what it says of its own, and the turn it holds.
// Its own mutex guards it, so that no wait of a write holds the
// synchronizer's.
type contention struct {
	opt TurnOptions
	id  string // names this synchronizer in its words and entries

	mu        sync.Mutex
	announcer Announcer            // nil until listening
	unlisten  func()               // stops the listening
	closed    bool                 // listens no more (Synchronizer.Close)
	waiting   map[string]waiter    // other writers' announced waits, by id
	changed   chan struct{}        // closed when waiting loses an entry
	mine      []byte               // the wait announced and not yet said done to
	wrote     map[string]uint64    // the newest entry read of each speaker
	void      map[string]time.Time // speakers whose claim came to nothing, and when
	own       ownTurn
	landed    time.Time     // when this synchronizer's last append landed
	tryTime   time.Duration // a moving average of how long a try takes here
}

type waiter struct {
	since uint64 // the base revision of the waiting write's first try
	heard time.Time
}

func newContention(opt TurnOptions) *contention {
	b := make([]byte, 8)
	rand.Read(b)
	return &contention{opt: opt.withDefaults(), id: hex.EncodeToString(b), waiting: map[string]waiter{},
		changed: make(chan struct{}), wrote: map[string]uint64{}, void: map[string]time.Time{}}
}

// A word is "wait <id> <since>", "done <id>" or "hello <id>". A writer
// says hello when it starts to listen: it has missed the words said before,
// and a writer that holds a turn says nothing until the turn ends, so every
// writer that waits or holds a turn says its wait again. Unheard, a
// newcomer would race the turn's holder, which does not give way to a
// younger writer, and lose every try of that turn.
func waitWord(id string, since uint64) []byte {
	return []byte("wait " + id + " " + strconv.FormatUint(since, 10))
}

func doneWord(id string) []byte { return []byte("done " + id) }

func helloWord(id string) []byte { return []byte("hello " + id) }

// listen starts hearing other writers' words, if log can carry them and
// nobody listens yet, and reports whether c hears them. Until it does,
// every write tries at once, as without an Announcer: turns are an
// improvement, not a condition. Called under the synchronizer's mu.
func (c *contention) listen(log Log) bool {
	if c.announcerOf() != nil {
		return true
	}
	a, ok := log.(Announcer)
	if !ok {
		return false
	}
	stop, err := a.Listen(c.hear)
	if err != nil {
		return false
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		stop()
		return false
	}
	c.announcer, c.unlisten = a, stop
	c.mu.Unlock()
	a.Announce(helloWord(c.id)) // a hint: unanswered, it costs only fairness
	return true
}

func (c *contention) announcerOf() Announcer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.announcer
}

// hear takes in one word from any writer. Words it cannot parse are dropped.
func (c *contention) hear(word []byte) {
	if len(word) > 64 {
		return
	}
	f := strings.Fields(string(word))
	if len(f) < 2 || f[1] == c.id {
		return
	}
	if f[0] == "hello" && len(f) == 2 {
		c.mu.Lock()
		mine, a := c.mine, c.announcer
		c.mu.Unlock()
		if mine != nil && a != nil {
			a.Announce(mine) // a hint, as every word
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case f[0] == "wait" && len(f) == 3:
		since, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return
		}
		c.waiting[f[1]] = waiter{since: since, heard: time.Now()}
	case f[0] == "done" && len(f) == 2:
		if _, ok := c.waiting[f[1]]; ok {
			delete(c.waiting, f[1])
			close(c.changed)
			c.changed = make(chan struct{})
		}
	}
}

// saw records the entries a read took in, by speaker: the evidence that
// a waiter writes.
func (c *contention) saw(speakers map[string]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, rev := range speakers {
		if len(c.wrote) > maxRemembered {
			clear(c.wrote)
		}
		c.wrote[id] = max(c.wrote[id], rev)
		delete(c.void, id)
	}
}

// maxRemembered bounds the ids c remembers, which anyone can make up.
const maxRemembered = 1024

// wroteAfter: the log, as read, holds an entry of id after revision rev.
func (c *contention) wroteAfter(id string, rev uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrote[id] > rev
}

// tried records how long a try (an append, or a confirmation) took.
func (c *contention) tried(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tryTime += (d - c.tryTime) / 8
}

// grace is how long the waiter first in line has to show an entry of its
// own: ClaimGrace, or more where tries are slow (a loaded machine, a
// cluster), since a waiter's turn costs it a catch-up and a try.
func (c *contention) grace() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.opt.ClaimGrace, 10*c.tryTime)
}

// voidClaim makes c ignore id's words until the log shows an entry of its
// own, or for a while: its claim came to nothing.
func (c *contention) voidClaim(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.void) > maxRemembered {
		clear(c.void)
	}
	c.void[id] = time.Now()
	delete(c.waiting, id)
}

// voidFor is how long a claim that came to nothing keeps its speaker's
// words ignored, unless the log shows an entry of the speaker first.
const voidFor = 30 * time.Second

// newest is the age of the youngest live waiter heard, 0 if none.
func (c *contention) newest() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var since uint64
	now := time.Now()
	for _, w := range c.waiting {
		if now.Sub(w.heard) < c.opt.StaleAfter {
			since = max(since, w.since)
		}
	}
	return since
}

// ahead reports how many live waiters go before w, which of them goes
// first, when the earliest of them goes stale, and a channel closed when
// one says it is done. It forgets the stale waiters, and ignores those
// whose claim came to nothing or that already went before w.
func (c *contention) ahead(w *write, now time.Time) (n int, first string, stale time.Time, changed <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var firstSince uint64
	for id, wt := range c.waiting {
		st := wt.heard.Add(c.opt.StaleAfter)
		if !now.Before(st) {
			delete(c.waiting, id)
			continue
		}
		if v, ok := c.void[id]; ok && now.Sub(v) < voidFor || w.passed[id] {
			continue
		}
		if wt.since > w.since || (wt.since == w.since && id > c.id) {
			continue
		}
		n++
		if first == "" || wt.since < firstSince || wt.since == firstSince && id < first {
			first, firstSince = id, wt.since
		}
		if stale.IsZero() || st.Before(stale) {
			stale = st
		}
	}
	return n, first, stale, c.changed
}

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

// write is one conditional write's part in taking turns.
type write struct {
	since      uint64        // its age: where the log was at its first try, or its turn's
	looping    bool          // it started right after this synchronizer's last commit
	noTurns    bool          // it takes no turns (WithoutTurns, or no Announcer)
	prefetched bool          // it caught up while next in line
	lost       int           // tries lost in a row
	said       time.Time     // when it last announced its wait; zero if never
	heldBack   time.Duration // in all
	lastHold   time.Duration // before the try under way

	// The claim of the waiter first in line, as this write judges it.
	first   string          // its id
	firstAt time.Time       // since when it is first
	from    uint64          // the local revision then
	shownAt time.Time       // when an entry of its own was read; zero before
	voided  time.Duration   // time lost to claims that came to nothing
	passed  map[string]bool // waiters that had their turn before this write, or lost their claim
}

// startWrite begins a write's part in taking turns: it continues or ends
// this synchronizer's turn.
func (c *contention) startWrite(local uint64, noTurns bool) *write {
	c.mu.Lock()
	w := &write{since: local, looping: time.Since(c.landed) < c.opt.BackToBack, noTurns: noTurns || c.announcer == nil}
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
	return w
}

// lost records a try of w that another writer beat, with the log at
// current: after AnnounceAfter lost appends in a row, w announces that it
// waits.
func (c *contention) lost(w *write, current uint64) {
	w.lost++
	if w.lost == 1 && w.said.IsZero() {
		// Its age is where the log was when it first tried, not where its
		// copy was: a copy that was old when the write began (a process
		// that writes once in a while) is no claim to go first.
		w.since = max(w.since, current)
	}
	if !w.noTurns && w.lost >= c.opt.AnnounceAfter {
		c.sayWaiting(w, time.Now())
	}
}

func (c *contention) sayWaiting(w *write, now time.Time) {
	w.said = now
	word := waitWord(c.id, w.since)
	c.mu.Lock()
	c.mine = word
	a := c.announcer
	c.mu.Unlock()
	a.Announce(word) // a hint: a lost word costs only fairness
}

// endWrite ends w's part. A looping writer whose write waited and landed
// holds the turn for its next back-to-back writes, up to TurnCommits or
// TurnTime; otherwise a writer that announced a wait says it is done, so
// that the writers holding back for it go on.
func (c *contention) endWrite(w *write, landed bool) {
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
		*t = ownTurn{gen: t.gen}
		c.mine = nil
		c.mu.Unlock()
		c.sayDoneIf(true)
		return
	}
	if !t.held || t.since != w.since {
		*t = ownTurn{held: true, since: w.since, started: c.landed, gen: t.gen}
	}
	t.said = w.said
	t.commits++
	if t.commits >= c.opt.TurnCommits || c.landed.Sub(t.started) >= c.opt.TurnTime {
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

// endTurnLocked gives up this synchronizer's turn, if it holds one, and
// reports whether it did: the caller then says done, once c.mu is free.
func (c *contention) endTurnLocked() bool {
	t := &c.own
	if !t.held {
		return false
	}
	*t = ownTurn{gen: t.gen}
	c.mine = nil
	return true
}

// close stops hearing other writers for good, saying done first if this
// synchronizer holds a turn, so that nobody waits for it. Writes then try
// at once.
func (c *contention) close() {
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
func (c *contention) sayDoneIf(ended bool) {
	if a := c.announcerOf(); ended && a != nil {
		a.Announce(doneWord(c.id)) // a hint, as sayWaiting's
	}
}

// holdBackLocked is called, under s.mu, before each try: it waits while a
// writer older than the current write waits for its turn, until that one
// says it is done, loses its claim, goes stale, ctx ends, or the write has
// held back for MaxHoldBack in all. It waits with s.mu unlocked. A write
// that holds back is waiting too: it announces so, and repeats its word
// meanwhile. It uses the wait to catch up, where that saves the others
// from waiting while it does so at its turn: before it joins the queue if
// its copy is known to be behind, and once when it is next in line. A
// write that waited catches up once more before it goes: the writers
// before it took their turns meanwhile, so a try on its copy would be lost
// for sure, and a read costs the same round trips as a lost try and its
// catch-up, without the try.
func (s *Synchronizer[S]) holdBackLocked(ctx context.Context, w *write) (err error) {
	if w.noTurns {
		return nil
	}
	c := s.cm
	before, waited := w.heldBack, false
	defer func() {
		w.lastHold = w.heldBack - before
		if waited && err == nil {
			_, err = s.fetchLocked(ctx, 0)
		}
	}()
	for w.heldBack < c.opt.MaxHoldBack && w.voided < 2*c.grace() {
		now := time.Now()
		ahead, first, stale, changed := c.ahead(w, now)
		if ahead == 0 {
			return nil
		}
		judgeBy, again, err := s.judgeClaimLocked(ctx, w, first, now)
		if err != nil || again {
			if err != nil {
				return err
			}
			continue
		}
		if err := s.queueUpLocked(ctx, w, ahead, now); err != nil {
			return err
		}
		wake := earliest(stale, judgeBy, now.Add(c.opt.MaxHoldBack-w.heldBack), w.said.Add(c.opt.Heartbeat)).Sub(now)
		if err := s.sleepUnlocked(ctx, wake, changed); err != nil {
			return err
		}
		waited = true
		w.heldBack += time.Since(now)
	}
	return nil
}

// queueUpLocked announces w's wait and catches up where that saves time
// (see holdBackLocked).
func (s *Synchronizer[S]) queueUpLocked(ctx context.Context, w *write, ahead int, now time.Time) error {
	c := s.cm
	if w.said.IsZero() {
		// Join the queue behind the waiters heard: an old copy is no
		// claim to go first. A waiter's age says the log has reached
		// it; a copy short of that is behind, so catch up first.
		newest := c.newest()
		if s.local.Load().Revision < newest {
			if _, err := s.fetchLocked(ctx, 0); err != nil {
				return err
			}
		}
		w.since = max(w.since, s.local.Load().Revision, newest)
	} else if ahead == 1 && !w.prefetched {
		w.prefetched = true
		if _, err := s.fetchLocked(ctx, 0); err != nil {
			return err
		}
	}
	if w.said.IsZero() || now.Sub(w.said) >= c.opt.Heartbeat {
		c.sayWaiting(w, now)
	}
	return nil
}

// judgeClaimLocked judges the claim of first, the waiter w holds back for:
// it must show an entry of its own within ClaimGrace of becoming first,
// and then goes before w for one turn (TurnTime). It returns when to judge
// again, or again=true when first no longer goes before w.
func (s *Synchronizer[S]) judgeClaimLocked(ctx context.Context, w *write, first string, now time.Time) (judgeBy time.Time, again bool, err error) {
	c := s.cm
	if w.first != first {
		w.first, w.firstAt, w.from, w.shownAt = first, now, s.local.Load().Revision, time.Time{}
	}
	if !w.shownAt.IsZero() {
		if judgeBy = w.shownAt.Add(c.opt.TurnTime); now.Before(judgeBy) {
			return judgeBy, false, nil
		}
		w.pass(first) // its turn before w is over
		return judgeBy, true, nil
	}
	if judgeBy = w.firstAt.Add(c.grace()); now.Before(judgeBy) {
		return judgeBy, false, nil
	}
	if _, err := s.fetchLocked(ctx, 0); err != nil {
		return judgeBy, false, err
	}
	if c.wroteAfter(first, w.from) {
		w.shownAt = now
		return now.Add(c.opt.TurnTime), false, nil
	}
	c.voidClaim(first)
	w.pass(first)
	w.voided += now.Sub(w.firstAt)
	return judgeBy, true, nil
}

func (w *write) pass(id string) {
	if w.passed == nil {
		w.passed = map[string]bool{}
	}
	w.passed[id] = true
}

// sleepUnlocked waits, with s.mu unlocked, for d, changed or ctx's end.
func (s *Synchronizer[S]) sleepUnlocked(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	s.mu.Unlock()
	defer s.mu.Lock()
	timer := time.NewTimer(max(d, time.Millisecond))
	defer timer.Stop()
	select {
	case <-changed:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func earliest(first time.Time, rest ...time.Time) time.Time {
	for _, t := range rest {
		if t.Before(first) {
			first = t
		}
	}
	return first
}
