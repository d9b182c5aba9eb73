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
// outside it, on the log's Announcer: after announceAfter lost tries in a
// row it announces that it is waiting, and since which revision (the base
// of its first try). Every writer that hears it holds back its next try
// while a waiter that started before it has not said it is done; among
// waiters the oldest goes first, ties broken by writer id. That is the
// Greedy contention manager of the STM literature (the oldest transaction
// wins), with its ages taken from the log rather than from clocks.
//
// The words are hints only. Every append stays conditional on the writer's
// copy being the latest, so a lost, late or forged word can make a writer
// wait or lose, never write on a stale copy. Waits are bounded: a waiter
// not heard from for staleAfter is forgotten, and no write holds back for
// longer than maxHoldBack in all, whatever it hears.
//
// A writer alone never hears a word and never waits; writers that pause
// between writes, as people do, rarely lose twice in a row.

// announceAfter is how many tries in a row a write loses before its writer
// announces that it is waiting.
const announceAfter = 2

var (
	// staleAfter: a waiter not heard from for this long is forgotten (it
	// may have died, or its "done" was lost). Waiters that hold back repeat
	// their word every heartbeat.
	staleAfter = 250 * time.Millisecond
	heartbeat  = 80 * time.Millisecond
	// maxHoldBack bounds the time one write spends holding back for others.
	maxHoldBack = time.Second
)

// turns is what a synchronizer hears of other writers' waits, and what it
// stands by itself.
type turns struct {
	id string // names this synchronizer in its words

	mu       sync.Mutex
	waiting  map[string]waiter // other writers' announced waits, by id
	changed  chan struct{}     // closed when waiting loses an entry
	mine     []byte            // the wait this synchronizer announced and has not said done to
	announce func([]byte) error
}

type waiter struct {
	since uint64 // the base revision of the waiting write's first try
	heard time.Time
}

func newTurns() turns {
	b := make([]byte, 8)
	rand.Read(b)
	return turns{id: hex.EncodeToString(b), waiting: map[string]waiter{}, changed: make(chan struct{})}
}

// A word is "wait <id> <since>", "done <id>" or "hello <id>". A writer
// says hello when it starts to listen: it has missed the words said before,
// and a writer that holds a turn says nothing until the turn ends, so every
// writer that waits or holds a turn says its wait again. Unheard, a
// newcomer would race the turn's holder, which does not give way to a
// younger writer, and lose every try of that turn (up to turnCommits).
func waitWord(id string, since uint64) []byte {
	return []byte("wait " + id + " " + strconv.FormatUint(since, 10))
}

func doneWord(id string) []byte { return []byte("done " + id) }

func helloWord(id string) []byte { return []byte("hello " + id) }

// hear takes in one word from any writer. Words it cannot parse are dropped.
func (t *turns) hear(word []byte) {
	if len(word) > 64 {
		return
	}
	f := strings.Fields(string(word))
	if len(f) < 2 || f[1] == t.id {
		return
	}
	if f[0] == "hello" && len(f) == 2 {
		t.mu.Lock()
		mine, announce := t.mine, t.announce
		t.mu.Unlock()
		if mine != nil && announce != nil {
			announce(mine) // a hint, as every word
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case f[0] == "wait" && len(f) == 3:
		since, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return
		}
		t.waiting[f[1]] = waiter{since: since, heard: time.Now()}
	case f[0] == "done" && len(f) == 2:
		if _, ok := t.waiting[f[1]]; ok {
			delete(t.waiting, f[1])
			close(t.changed)
			t.changed = make(chan struct{})
		}
	}
}

// newest is the age of the youngest live waiter heard, 0 if none.
func (t *turns) newest() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var since uint64
	now := time.Now()
	for _, w := range t.waiting {
		if now.Sub(w.heard) < staleAfter {
			since = max(since, w.since)
		}
	}
	return since
}

// ahead reports how many live waiters go before a write of this
// synchronizer whose age is since, and when the earliest of them goes
// stale; it forgets the stale ones.
func (t *turns) ahead(since uint64, now time.Time) (int, time.Time, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int
	var first time.Time
	for id, w := range t.waiting {
		stale := w.heard.Add(staleAfter)
		if !now.Before(stale) {
			delete(t.waiting, id)
			continue
		}
		if w.since > since || (w.since == since && id > t.id) {
			continue
		}
		n++
		if first.IsZero() || stale.Before(first) {
			first = stale
		}
	}
	return n, first, t.changed
}

// ownTurn is the turn this synchronizer holds, if any, across its writes:
// a waiter that got through keeps going before the others for up to
// turnCommits back-to-back commits or turnTime, whichever comes first, so
// that a handoff, which costs the next writer a read of what the last one
// wrote, is paid once per turn rather than once per commit. Guarded by the
// synchronizer's mu.
type ownTurn struct {
	held    bool
	since   uint64    // the age its words give
	said    time.Time // when it last announced
	started time.Time // when its first commit landed
	commits int       // commits made in the turn
	gen     int       // counts writes, so a late release knows it is late
}

// turnCommits is how many commits one turn holds at most. A handoff costs
// about one commit's time: with turns of 16, 4 writers on one server made
// 1.05× to 1.14× NATS KV's commits where turns of 32 made 1.16× to 1.20×;
// longer turns make the others wait longer.
const turnCommits = 32

// turnTime bounds a turn's length where commits are slow (a replicated
// stream): a queue of 16 writers then waits at most about 16 turnTimes
// in all, well inside maxHoldBack, beyond which waiters stop holding back
// and race again.
var turnTime = 40 * time.Millisecond

// backToBack: a write that starts later than this after its
// synchronizer's last commit is not part of a closed loop of writes; such a
// write (a person's, a periodic refresh) never keeps the turn, and a turn
// is given up once this passes with no write.
var backToBack = 10 * time.Millisecond

// write is one conditional write's part in taking turns.
type write struct {
	since      uint64        // its age: where the log was at its first try, or its turn's
	looping    bool          // it started right after this synchronizer's last commit
	prefetched bool          // it caught up while next in line
	lost       int           // tries lost in a row
	said       time.Time     // when it last announced its wait; zero if never
	heldBack   time.Duration // in all
	lastHold   time.Duration // before the try under way
	announcer  Announcer
}

// startWriteLocked begins a write's part in taking turns: it continues or
// ends this synchronizer's turn.
func (s *Synchronizer[S]) startWriteLocked() *write {
	w := &write{since: s.local.Load().Revision, looping: time.Since(s.lastLanded) < backToBack}
	if !s.listenLocked() {
		return w
	}
	w.announcer = s.log.(Announcer)
	t := &s.ownTurn
	t.gen++
	if t.held && w.looping {
		w.since, w.said = t.since, t.said
	} else {
		s.endTurnLocked()
	}
	return w
}

// listenLocked starts hearing other writers' words, if the log can carry
// them and nobody listens yet, and reports whether the synchronizer hears
// them. Until it does, every write tries at once, as without an Announcer:
// turns are an improvement, not a condition.
func (s *Synchronizer[S]) listenLocked() bool {
	if s.listening {
		return true
	}
	a, ok := s.log.(Announcer)
	if !ok {
		return false
	}
	if _, err := a.Listen(s.turns.hear); err != nil {
		return false
	}
	s.turns.mu.Lock()
	s.turns.announce = a.Announce
	s.turns.mu.Unlock()
	a.Announce(helloWord(s.turns.id)) // a hint: unanswered, it costs only fairness
	s.listening = true
	return true
}

// holdBackLocked is called before each try: it waits while a writer older
// than the current write waits for its turn, until that one says it is
// done, goes stale, ctx ends, or the write has held back for maxHoldBack in
// all. A write that holds back is waiting too: it announces so, and repeats
// its word meanwhile. It uses the wait to catch up, where that saves the
// others from waiting while it does so at its turn: before it joins the
// queue if its copy is known to be behind, and once when it is next in
// line. A write that waited catches up once more before it goes: the
// writers before it took their turns meanwhile, so a try on its copy would
// be lost for sure, and a read costs the same round trips as a lost try
// and its catch-up, without the try.
func (s *Synchronizer[S]) holdBackLocked(ctx context.Context) (err error) {
	w := s.writing
	if w == nil || w.announcer == nil {
		return nil
	}
	before := w.heldBack
	waited := false
	defer func() {
		w.lastHold = w.heldBack - before
		if waited && err == nil {
			_, err = s.fetchLocked(ctx, 0)
		}
	}()
	for w.heldBack < maxHoldBack {
		now := time.Now()
		ahead, stale, changed := s.turns.ahead(w.since, now)
		if ahead == 0 {
			return nil
		}
		if w.said.IsZero() {
			// Join the queue behind the waiters heard: an old copy is no
			// claim to go first. A waiter's age says the log has reached
			// it; a copy short of that is behind, so catch up first.
			newest := s.turns.newest()
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
		if w.said.IsZero() || now.Sub(w.said) >= heartbeat {
			s.sayWaiting(w, now)
		}
		wake := min(stale.Sub(now), maxHoldBack-w.heldBack, heartbeat-now.Sub(w.said))
		timer := time.NewTimer(max(wake, time.Millisecond))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
		waited = true
		w.heldBack += time.Since(now)
	}
	return nil
}

// lostLocked records a try of w that another writer beat, with the log
// at current: after announceAfter lost appends in a row, w announces that
// it waits.
func (s *Synchronizer[S]) lostLocked(w *write, current uint64) {
	w.lost++
	if w.lost == 1 && w.said.IsZero() {
		// Its age is where the log was when it first tried, not where its
		// copy was: a copy that was old when the write began (a process
		// that writes once in a while) is no claim to go first.
		w.since = max(w.since, current)
	}
	if w.announcer != nil && w.lost >= announceAfter {
		s.sayWaiting(w, time.Now())
	}
}

func (s *Synchronizer[S]) sayWaiting(w *write, now time.Time) {
	w.said = now
	word := waitWord(s.turns.id, w.since)
	s.turns.mu.Lock()
	s.turns.mine = word
	s.turns.mu.Unlock()
	w.announcer.Announce(word) // a hint: a lost word costs only fairness
}

// endWriteLocked ends w's part. A looping writer whose write waited and
// landed holds the turn for its next back-to-back writes, up to
// turnCommits or turnTime; otherwise a writer that announced a wait says it
// is done, so that the writers holding back for it go on.
func (s *Synchronizer[S]) endWriteLocked(w *write, landed bool) {
	if landed {
		s.lastLanded = time.Now()
	}
	if w.said.IsZero() {
		return
	}
	t := &s.ownTurn
	if !landed || !w.looping {
		*t = ownTurn{gen: t.gen}
		s.sayDone()
		return
	}
	if !t.held || t.since != w.since {
		*t = ownTurn{held: true, since: w.since, started: s.lastLanded, gen: t.gen}
	}
	t.said = w.said
	t.commits++
	if t.commits >= turnCommits || s.lastLanded.Sub(t.started) >= turnTime {
		s.endTurnLocked()
		return
	}
	gen := t.gen
	time.AfterFunc(backToBack, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ownTurn.gen == gen {
			s.endTurnLocked()
		}
	})
}

// endTurnLocked gives up this synchronizer's turn, if it holds one.
func (s *Synchronizer[S]) endTurnLocked() {
	t := &s.ownTurn
	if !t.held {
		return
	}
	*t = ownTurn{gen: t.gen}
	s.sayDone()
}

// sayDone tells the writers holding back for this one that it is done.
func (s *Synchronizer[S]) sayDone() {
	s.turns.mu.Lock()
	s.turns.mine = nil
	s.turns.mu.Unlock()
	if a, ok := s.log.(Announcer); ok {
		a.Announce(doneWord(s.turns.id)) // a hint, as sayWaiting's
	}
}
