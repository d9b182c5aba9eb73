// Package turns is the contention manager of package statesync: writers
// that keep losing conditional appends to each other take turns.
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
// A write that does not loop (a person's, among scripts' loops) goes
// before the looping ones, and says so at its first lost try, so that it
// waits for about the commit under way rather than for every turn.
//
// The words are hints only, and anyone may say them. Every append stays
// conditional on the writer's copy being the latest, so a lost, late or
// forged word can make a writer wait or lose, never write on a stale copy.
// And a word alone holds nobody back for long: each entry records who
// wrote it (the speaker, see Speaker), and the waiter first in line must
// show an entry of its own in the log within ClaimGrace (longer where
// tries are slow), or it loses its claim and its words are ignored until
// the log shows one. Each waiter goes before a given write once, for one
// turn, and a write gives up holding back once claims that came to nothing
// have cost it twice that grace, or after MaxHoldBack in all. The wait
// itself holds no lock: reads, watches and unconditional writes of the
// process go on meanwhile, and writes that must land at a time (Without)
// take no turns at all.
//
// A writer alone never hears a word and never waits; writers that pause
// between writes, as people do, rarely lose twice in a row.
//
// A synchronizer has a Manager (statesync.WithTurns gives it one with
// chosen Options); the synchronizer starts a Write for each conditional
// write and reports its tries to it.
package turns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options tunes how writers take turns. A zero field takes its default.
type Options struct {
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
	// that long, whichever comes first (32, 40 ms); while more than three
	// other writers wait, 3/n of that for n waiting, at least 4 commits or
	// 5 ms.
	TurnCommits int
	TurnTime    time.Duration
	// ClaimGrace is how long the waiter first in line has at least to show
	// an entry of its own in the log before it loses its claim (50 ms); ten
	// times the time a try of the judging writer takes, where that is
	// longer. A waiter says how long its own tries take, and gets
	// ClaimGrace plus twice that, up to MaxClaimGrace (3 s),
	// so that a slow honest writer (a large snapshot) is not cut short by
	// writers whose tries are quick; its words stay fresh for that long too.
	ClaimGrace, MaxClaimGrace time.Duration
	// Trust, if set, is what an earlier manager of the same writer learned
	// of waiters' words about their tries (Manager.Trust): a process that
	// ends and comes back (a one-shot command run again) starts from it,
	// grown back over the time since, rather than trusting such words in
	// full, so that made-up words do not cost each process MaxClaimGrace
	// anew.
	Trust *Trust
	// FromFirstWrite: the manager starts hearing other writers, and says
	// hello to them, at its synchronizer's first conditional write rather
	// than when the synchronizer loads the state, so that a process that
	// only reads adds nothing to the writers' traffic. Its first write may
	// not hear a waiter that spoke before it listened.
	FromFirstWrite bool
}

func (t Options) withDefaults() Options {
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
	def(&t.MaxClaimGrace, 3*time.Second)
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
// (statesync's Entry.Speaker), so that readers can tell a waiter that writes from one
// that only talks.
func Speaker(ctx context.Context) string {
	id, _ := ctx.Value(speakerKey{}).(string)
	return id
}

type withoutKey struct{}

// Without marks a write as one that must land when it is made (a lease's
// expiry, whose entry's time decides what it does): it never holds back
// for other writers' turns, nor queues behind writes that do.
func Without(ctx context.Context) context.Context {
	return context.WithValue(ctx, withoutKey{}, true)
}

// Exempt reports whether a write under ctx takes no turns (Without).
func Exempt(ctx context.Context) bool { return ctx.Value(withoutKey{}) != nil }

// Announcer is implemented by logs that can carry short words among the
// synchronizers of one log, outside the log: writers use them to take
// turns. Words may be lost, repeated, late or forged; they never change
// what a synchronizer takes the log to hold.
type Announcer interface {
	// Announce sends word to every synchronizer listening on the log
	// (including, possibly, the sender).
	Announce(word []byte) error
	// Listen calls fn, from another goroutine or the announcer's, with each
	// word announced by anyone, until stop is called. fn must not block.
	Listen(fn func(word []byte)) (stop func(), err error)
	// An Announcer's log also records with each entry appended the
	// Speaker of the append's context (statesync's Entry.Speaker): the
	// evidence that a writer who says it waits writes.
}

// Carrier is implemented by logs whose writers can hand each other calls
// to commit (combining: see statesync.UpdateOp), as requests to one writer,
// by its id, which answers each once its entry carries the call. Like every
// word, a handed call or an answer may be lost, late or forged: the writer
// that commits a call checks it as it would its own, and the writer that
// handed it believes no answer but the log's entries.
type Carrier interface {
	// Hand sends data to the writer named to and returns its answer, or
	// an error when none came before ctx ended (or nobody listens: then
	// one that wraps ErrNotTaken, if the log knows that nobody got it).
	Hand(ctx context.Context, to string, data []byte) ([]byte, error)
	// Take calls fn, from another goroutine, with what anyone hands the
	// writer named id, the name the hander's writes go by (its log's
	// writer, for display; empty if it gave none), and a function that
	// answers it (once; it may be called later, from any goroutine), until
	// stop is called. fn must not block.
	Take(id string, fn func(data []byte, writer string, answer func([]byte))) (stop func(), err error)
}

// Takes makes fn hear what other writers hand this one, once it listens
// (a log that is not a Carrier hands nothing). Call it before the
// synchronizer loads the state.
func (c *Manager) Takes(fn func(data []byte, writer string, answer func([]byte))) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.takes = fn
}

// ErrNotTaken is what a Carrier's Hand wraps when it knows that no writer
// got the call: nobody listened for the writer named (NATS's no
// responders: the server had no subscription to deliver it to). Such a
// call cannot be carried, and its outcome is its own writer's alone.
var ErrNotTaken = errors.New("no writer took the call")

// Hand sends data to the writer named to, if the log can (a Carrier), and
// returns a channel that gets its answer, or nil if none came before ctx
// ended. The channel is closed with no answer when no writer got the call
// (ErrNotTaken).
func (c *Manager) Hand(ctx context.Context, to string, data []byte) <-chan []byte {
	answer := make(chan []byte, 1)
	cr, ok := c.announcerOf().(Carrier)
	if !ok {
		answer <- nil
		return answer
	}
	go func() {
		a, err := cr.Hand(ctx, to, data)
		if errors.Is(err, ErrNotTaken) {
			close(answer)
			return
		}
		if err != nil {
			a = nil
		}
		answer <- a
	}()
	return answer
}

// ContendedError is a conditional write, or a compaction, that ran out of
// time after losing to other writers: the context ended (Err says how) while
// it was retrying, after Lost tries in a row had found that another writer
// had appended first. The log answered each of those tries; the write was
// starved, not cut off. errors.Is(err, context.DeadlineExceeded) still holds.
// A write whose context ended while it held back for older writers' turns,
// before any try of it was lost, has Lost 0 and HeldBack how long it held
// back.
type ContendedError struct {
	Lost     int
	HeldBack time.Duration
	Err      error
}

func (e *ContendedError) Error() string {
	if e.Lost == 0 {
		return fmt.Sprintf("held back %v for older writers' turns, then: %v", e.HeldBack.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("lost %d tries in a row to other writers, then: %v", e.Lost, e.Err)
}

func (e *ContendedError) Unwrap() error { return e.Err }

// Manager is the contention manager of one synchronizer: what it hears of
// other writers' waits, what it says of its own, and the turn it holds.
// Its own mutex guards it, so that no wait of a write holds the
// synchronizer's. A Manager serves one synchronizer (its id names that
// writer); statesync.WithTurns hands it over.
type Manager struct {
	opt Options
	id  string // names this synchronizer in its words and entries

	mu        sync.Mutex
	announcer Announcer // nil until listening
	unlisten  func()    // stops the listening
	latest    string    // the speaker of the newest entry read, at latestAt
	latestAt  uint64
	// latestLoops: that entry came back to back after one of latest's.
	latestLoops bool
	carried     bool                               // another writer committed this one's last write
	takes       func([]byte, string, func([]byte)) // hears the calls other writers hand this one (Takes)
	closed      bool                               // listens no more (Synchronizer.Close)
	waiting     map[string]waiter                  // other writers' announced waits, by id
	changed     chan struct{}                      // closed when waiting loses an entry
	mine        []byte                             // the wait announced and not yet said done to
	wrote       map[string]uint64                  // the newest entry read of each speaker
	void        map[string]voided                  // speakers whose claim came to nothing
	own         ownTurn
	landed      time.Time     // when this synchronizer's last append landed
	tryTime     time.Duration // a moving average of how long a try takes here
	// trust bounds the grace a waiter's own word about its tries can earn
	// it: halved by each such claim that came to nothing, so that made-up
	// waiters that say their tries are slow cost little for long, and
	// restored by claims the log bore out, and over voidFor. Full at
	// first, or Options.Trust.
	trust   time.Duration
	trustAt time.Time // when trust was last brought up to date
	// madeUp holds the names whose claims came to nothing, and when, as
	// this manager judged them or Options.Trust told it; overflowed: a
	// write's bound on displaced claims overflowed (made-up names for sure).
	madeUp     map[string]time.Time
	overflowed bool
	learned    bool // this manager judged a claim that came to nothing
	// Anyone can say hello: one is answered at once, and those heard within
	// helloEvery after it by one answer when that ends.
	helloAt  time.Time // when a hello was last answered
	helloDue bool      // a hello waits for that answer
}

type waiter struct {
	once  bool          // a write that does not loop (a "once" word)
	since uint64        // the base revision of the waiting write's first try
	try   time.Duration // how long its tries take, as it says
	heard time.Time
}

// New returns a manager with the options o.
func New(o Options) *Manager {
	b := make([]byte, 8)
	rand.Read(b)
	o = o.withDefaults()
	c := &Manager{opt: o, id: hex.EncodeToString(b), waiting: map[string]waiter{}, trust: o.MaxClaimGrace,
		changed: make(chan struct{}), wrote: map[string]uint64{}, void: map[string]voided{}}
	if t := o.Trust; t != nil {
		now := time.Now()
		at := t.At
		if at.IsZero() || at.After(now) {
			at = now
		}
		for _, name := range t.MadeUp {
			c.noteMadeUpLocked(name, at)
		}
		if c.evidentLocked(now) {
			c.trust, c.trustAt = min(max(t.Most, 0), o.MaxClaimGrace), at
		}
	}
	return c
}

// noteMadeUpLocked records that name's claim came to nothing at at.
func (c *Manager) noteMadeUpLocked(name string, at time.Time) {
	if c.madeUp == nil {
		c.madeUp = map[string]time.Time{}
	}
	if len(c.madeUp) >= maxRemembered {
		clear(c.madeUp)
	}
	if at.After(c.madeUp[name]) {
		c.madeUp[name] = at
	}
}

// evidentLocked: made-up words are evident, as of now: the claims of
// madeUpEvident names came to nothing within voidFor, or a write's bound
// on displaced claims overflowed. One name's claims that come to nothing
// are no evidence: an honest writer whose tries are slower than it first
// said (a large import) can have a claim or two cut short, and a later
// process that started from the trust that cost would cut it short again,
// and again.
func (c *Manager) evidentLocked(now time.Time) bool {
	n := 0
	for _, at := range c.madeUp {
		if now.Sub(at) < voidFor {
			n++
		}
	}
	return c.overflowed || n >= madeUpEvident
}

// Trust is what a manager has learned of waiters' words about their
// tries: the most such a word earns a waiter (see Options.ClaimGrace) as of
// At, growing back with time after At, and the names whose claims came to
// nothing lately. A manager started from it applies Most only if those
// names make made-up words evident (see evidentLocked).
type Trust struct {
	Most   time.Duration
	At     time.Time
	MadeUp []string
}

// Trust is what c has learned, for a later manager of the same writer to
// start from (Options.Trust); learned is false when c judged no claim that
// came to nothing, and has nothing to add.
func (c *Manager) Trust() (t Trust, learned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.recoverTrustLocked(now)
	t = Trust{Most: c.trust, At: now}
	type named struct {
		name string
		at   time.Time
	}
	var recent []named
	for name, at := range c.madeUp {
		if now.Sub(at) < voidFor {
			recent = append(recent, named{name, at})
		}
	}
	slices.SortFunc(recent, func(a, b named) int { return b.at.Compare(a.at) })
	for _, n := range recent[:min(len(recent), keptMadeUp)] {
		t.MadeUp = append(t.MadeUp, n.name)
	}
	return t, c.learned
}

// madeUpEvident is how many names whose claims came to nothing make
// made-up words evident, and keptMadeUp how many Trust keeps.
const (
	madeUpEvident = 3
	keptMadeUp    = 16
)

// A word is "wait <id> <since> <try>" (try: how long the waiter's tries
// take, in milliseconds; words without it are heard too), "once ..." (the
// same, from a write that does not loop: it goes before every looping
// waiter), "done <id>" or "hello <id>". A writer
// says hello when it starts to listen: it has missed the words said before,
// and a writer that holds a turn says nothing until the turn ends, so every
// writer that waits or holds a turn says its wait again. Unheard, a
// newcomer would race the turn's holder, which does not give way to a
// younger writer, and lose every try of that turn.
func waitWord(id string, since uint64, try time.Duration, once bool) []byte {
	verb := "wait "
	if once {
		verb = "once "
	}
	return []byte(verb + id + " " + strconv.FormatUint(since, 10) + " " + strconv.FormatInt(try.Milliseconds(), 10))
}

func doneWord(id string) []byte { return []byte("done " + id) }

func helloWord(id string) []byte { return []byte("hello " + id) }

// ID is the name the synchronizer goes by in its words and, through
// SpeakerContext, in its entries.
func (c *Manager) ID() string { return c.id }

// Loaded tells the manager that its synchronizer loaded the state from log:
// it starts hearing other writers then, unless FromFirstWrite.
func (c *Manager) Loaded(log any) {
	if !c.opt.FromFirstWrite {
		c.listen(log)
	}
}

// listen starts hearing other writers' words, if log can carry them and
// nobody listens yet, and reports whether c hears them. Until it does,
// every write tries at once, as without an Announcer: turns are an
// improvement, not a condition.
func (c *Manager) listen(log any) bool {
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
	takes := c.takes
	c.mu.Unlock()
	if cr, ok := log.(Carrier); ok && takes != nil {
		if untake, err := cr.Take(c.id, takes); err == nil {
			unlisten := stop
			stop = func() { unlisten(); untake() }
		}
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

func (c *Manager) announcerOf() Announcer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.announcer
}

// hear takes in one word from any writer. Words it cannot parse are dropped.
func (c *Manager) hear(word []byte) {
	if len(word) > 64 {
		return
	}
	f := strings.Fields(string(word))
	if len(f) < 2 || f[1] == c.id {
		return
	}
	if f[0] == "hello" && len(f) == 2 {
		c.heardHello()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case (f[0] == "wait" || f[0] == "once") && (len(f) == 3 || len(f) == 4):
		since, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return
		}
		var ms uint64
		if len(f) == 4 {
			if ms, err = strconv.ParseUint(f[3], 10, 32); err != nil {
				return
			}
		}
		if _, known := c.waiting[f[1]]; !known && len(c.waiting) >= maxRemembered {
			// Anyone can make ids up: forgetting every claim costs only
			// fairness, and those writers hold back no more.
			clear(c.waiting)
			close(c.changed)
			c.changed = make(chan struct{})
		}
		try := min(time.Duration(ms)*time.Millisecond, c.opt.MaxClaimGrace)
		c.waiting[f[1]] = waiter{once: f[0] == "once", since: since, try: try, heard: time.Now()}
	case f[0] == "done" && len(f) == 2:
		if _, ok := c.waiting[f[1]]; ok {
			delete(c.waiting, f[1])
			close(c.changed)
			c.changed = make(chan struct{})
		}
	}
}

// helloEvery bounds how often a manager answers hellos, which anyone can
// say: a flood of them costs each waiter one word per helloEvery.
const helloEvery = 50 * time.Millisecond

// heardHello says this writer's wait again, if it has one, for a newcomer
// that missed it: at once, or, within helloEvery of the last answer, once
// that ends.
func (c *Manager) heardHello() {
	c.mu.Lock()
	if wait := time.Until(c.helloAt.Add(helloEvery)); wait > 0 {
		if !c.helloDue {
			c.helloDue = true
			time.AfterFunc(wait, c.answerHello)
		}
		c.mu.Unlock()
		return
	}
	c.answerHelloUnlock()
}

func (c *Manager) answerHello() {
	c.mu.Lock()
	c.helloDue = false
	c.answerHelloUnlock()
}

// answerHelloUnlock answers, with c.mu held, and releases it before it
// speaks: an announcer may call hear back at once.
func (c *Manager) answerHelloUnlock() {
	c.helloAt = time.Now()
	mine, a := c.mine, c.announcer
	c.mu.Unlock()
	if mine != nil && a != nil {
		a.Announce(mine) // a hint, as every word
	}
}

// Saw records the entries a read took in, by speaker (the newest revision
// of each): the evidence that a waiter writes.
func (c *Manager) Saw(speakers map[string]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, rev := range speakers {
		if len(c.wrote) > maxRemembered {
			clear(c.wrote)
		}
		c.wrote[id] = max(c.wrote[id], rev)
		delete(c.void, id)
		if rev > c.latestAt {
			c.latest, c.latestAt, c.latestLoops = id, rev, false
		}
	}
}

// SawGap records that the entry at rev, by id, came gap after the entry
// just before it, which was id's too (gap < 0: it was not, or the log
// gave no times): a writer whose entries come back to back loops.
func (c *Manager) SawGap(id string, rev uint64, gap time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == c.latest && rev == c.latestAt {
		c.latestLoops = gap >= 0 && gap < c.opt.BackToBack
	}
}

// maxRemembered bounds the ids c remembers, which anyone can make up.
const maxRemembered = 1024

// isWaiting: id is among the waiters heard, not yet forgotten.
func (c *Manager) isWaiting(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.waiting[id]
	return ok
}

// wroteAfter: the log, as read, holds an entry of id after revision rev.
func (c *Manager) wroteAfter(id string, rev uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrote[id] > rev
}

// tried records how long a try (an append, or a confirmation) took.
func (c *Manager) tried(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tryTime += (d - c.tryTime) / 8
}

// grace is how long the waiter first in line has at least to show an
// entry of its own: ClaimGrace, or more where tries are slow (a loaded
// machine, a cluster), since a waiter's turn costs it a catch-up and a try.
func (c *Manager) grace() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.graceLocked()
}

func (c *Manager) graceLocked() time.Duration { return max(c.opt.ClaimGrace, 10*c.tryTime) }

// claimGrace is how long a waiter whose tries take try, as it says, has to
// show an entry of its own, and how much of that its word earned it.
func (c *Manager) claimGrace(try time.Duration) (grace, earned time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	base := c.graceLocked()
	c.recoverTrustLocked(time.Now())
	said := min(c.opt.ClaimGrace+2*try, c.trust)
	return max(base, said), max(said-base, 0)
}

// judged records whether a claim came to something, and how much time its
// waiter's word had earned it (see trust).
func (c *Manager) judged(earned time.Duration, shown bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recoverTrustLocked(time.Now())
	if shown {
		c.trust = min(c.opt.MaxClaimGrace, 2*c.trust+c.opt.ClaimGrace)
	} else if earned > 0 {
		c.trust /= 2
	}
}

// voidClaim makes c ignore id's words until the log shows an entry of its
// own, or for a while: its claim came to nothing.
func (c *Manager) voidClaim(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.void) > maxRemembered {
		clear(c.void)
	}
	period := voidFirst
	if v, ok := c.void[id]; ok {
		period = min(2*v.period, voidFor)
	}
	c.noteMadeUpLocked(id, time.Now())
	c.learned = true
	c.void[id] = voided{until: time.Now().Add(period), period: period}
	delete(c.waiting, id)
}

// A claim that came to nothing has its speaker's words ignored, unless the
// log shows an entry of the speaker first, for voidFirst, and twice as
// long at each claim of it that comes to nothing again, up to voidFor: a
// slow honest writer cut short once on a loaded machine is heard again
// soon, one that only talks ever more rarely.
const (
	voidFirst = time.Second
	voidFor   = 30 * time.Second
)

type voided struct {
	until  time.Time
	period time.Duration
}

// ignored: id's claim came to nothing and its words are still ignored.
func (c *Manager) ignored(id string, now time.Time) bool {
	v, ok := c.void[id]
	return ok && now.Before(v.until)
}

// recoverTrustLocked gives back trust at MaxClaimGrace per voidFor.
func (c *Manager) recoverTrustLocked(now time.Time) {
	if !c.trustAt.IsZero() {
		back := float64(c.opt.MaxClaimGrace) * min(now.Sub(c.trustAt), voidFor).Seconds() / voidFor.Seconds()
		c.trust = min(c.opt.MaxClaimGrace, c.trust+time.Duration(back))
	}
	c.trustAt = now
}

// turnLocked is how long a turn lasts, in commits and in time: TurnCommits
// and TurnTime while up to turnShare other writers wait, and shorter beyond,
// so that a writer waits for the turns of those before it about as long
// however many they are (each turn still at least minTurnCommits long).
func (c *Manager) turnLocked() (int, time.Duration) {
	waiters, now := 0, time.Now()
	for id, w := range c.waiting {
		if now.Before(c.staleAt(w)) && !c.ignored(id, now) {
			waiters++
		}
	}
	if waiters <= turnShare {
		return c.opt.TurnCommits, c.opt.TurnTime
	}
	return max(minTurnCommits, c.opt.TurnCommits*turnShare/waiters), max(minTurnTime, c.opt.TurnTime*turnShare/time.Duration(waiters))
}

// A turn is full length while up to turnShare other writers wait, and
// never shorter than minTurnCommits or minTurnTime: a handoff costs the
// next writer a catch-up.
const (
	turnShare      = 3
	minTurnCommits = 4
	minTurnTime    = 5 * time.Millisecond
)

// staleAt is when w is forgotten unless heard again: a waiter says
// nothing while it tries.
func (c *Manager) staleAt(w waiter) time.Time {
	return w.heard.Add(c.opt.StaleAfter + min(2*w.try, c.opt.MaxClaimGrace))
}

// waiterID names a waiter, with how long its tries take as it says.
type waiterID struct {
	id  string
	try time.Duration
}

// newest is the age of the youngest live waiter heard (whose claim did
// not come to nothing), 0 if none.
func (c *Manager) newest() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var since uint64
	now := time.Now()
	for id, w := range c.waiting {
		if now.Before(c.staleAt(w)) && !c.ignored(id, now) {
			since = max(since, w.since)
		}
	}
	return since
}

// ahead reports how many live waiters go before w, which of them goes
// first, when the earliest of them goes stale, and a channel closed when
// one says it is done. It forgets the stale waiters, and ignores those
// whose claim came to nothing or that already went before w.
func (c *Manager) ahead(w *Write, now time.Time) (n int, first waiterID, stale time.Time, changed <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var firstW waiter
	for id, wt := range c.waiting {
		st := c.staleAt(wt)
		if !now.Before(st) {
			delete(c.waiting, id)
			continue
		}
		if c.ignored(id, now) || w.passed[id] {
			continue
		}
		if !goesBefore(wt, id, w, c.id) {
			continue
		}
		n++
		// The first is the one that goes first, in goesBefore's order: a
		// looping waiter holds back for a one-off one however old it is,
		// and would show nothing in its grace.
		if first.id == "" || goesFirst(wt, id, firstW, first.id) {
			first, firstW = waiterID{id, wt.try}, wt
		}
		if stale.IsZero() || st.Before(stale) {
			stale = st
		}
	}
	return n, first, stale, c.changed
}

// goesBefore: waiter wt, named id, goes before write w of the writer named
// me. A write that does not loop (a person's, among scripts' loops) goes
// before every looping one, so that it waits at most for the commit under
// way; among writes of one kind the oldest goes first, ties broken by id.
func goesBefore(wt waiter, id string, w *Write, me string) bool {
	return goesFirst(wt, id, waiter{once: w.once, since: w.since}, me)
}

// goesFirst: waiter a, named aID, goes before waiter b, named bID.
func goesFirst(a waiter, aID string, b waiter, bID string) bool {
	if a.once != b.once {
		return a.once
	}
	return a.since < b.since || a.since == b.since && aID < bID
}
