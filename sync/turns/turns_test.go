package turns_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// patient: words alone keep their claim for the test's length. (A test
// whose waiters are only words gives them a ClaimGrace long enough that
// they keep their claim.)
var patient = turns.Options{ClaimGrace: time.Hour}

// heard collects the words announced on a log.
type heard struct {
	mu    sync.Mutex
	words []string
}

func listen(t *testing.T, log turns.Announcer) *heard {
	t.Helper()
	h := &heard{}
	stop, err := log.Listen(func(w []byte) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.words = append(h.words, string(w))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return h
}

// saw reports whether word was said; a "wait" or "once" word matches
// whatever try time it says.
func (h *heard) saw(word string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.words {
		if sameWord(w, word) {
			return true
		}
	}
	return false
}

// sameWord: said is want, or want with a try time after it.
func sameWord(said, want string) bool {
	f := strings.Fields(said)
	return said == want || len(f) == 4 && (f[0] == "wait" || f[0] == "once") && strings.Join(f[:3], " ") == want
}

func (h *heard) from(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var mine []string
	for _, w := range h.words {
		if strings.Fields(w)[1] == id {
			mine = append(mine, w)
		}
	}
	return mine
}

// incrementAsync runs an increment through s in the background.
func incrementAsync(s *statesync.Synchronizer[counter]) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := increment(context.Background(), s)
		done <- err
	}()
	return done
}

func lastRevision(t *testing.T, log statesync.Log) uint64 {
	t.Helper()
	rev, err := logtest.LastRevision(log, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// A writer that hears an older writer waiting holds back its write, says
// that it waits too, and writes once the older one says it is done.
func TestWriterHoldsBackForAnOlderWaiter(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	var mu sync.Mutex
	var tries []statesync.Attempt
	s := newCounter(t, log, patient, statesync.WithTrace(func(a statesync.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, a)
	}))
	h := listen(t, log)
	log.Announce([]byte("once older 0")) // waiting since before s's state
	before := lastRevision(t, log)

	done := incrementAsync(s)
	me := turnID(s)
	waitFor(t, "the writer to say it waits", func() bool { return h.saw(fmt.Sprintf("once %s %d", me, before)) })
	if got := lastRevision(t, log); got != before {
		t.Fatalf("the writer wrote (revision %d) while an older writer waited", got)
	}
	log.Announce([]byte("done older"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := value(t, s); got != 1 {
		t.Fatalf("value %d, want 1", got)
	}
	mu.Lock()
	if len(tries) != 1 || tries[0].HeldBack <= 0 {
		t.Errorf("tries %+v, want one that says it held back", tries)
	}
	mu.Unlock()
	waitFor(t, "the writer to say it is done", func() bool { return h.saw("done " + me) })
}

// An unconditional update cannot lose a race, so it neither holds back for
// older waiters nor says that it waits.
func TestUnconditionalUpdateDoesNotWaitForTurns(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, turns.Options{})
	h := listen(t, log)
	log.Announce([]byte("once older 0"))
	waitFor(t, "the writer to hear the waiter", func() bool { return h.saw("once older 0") })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.UpdateUnconditionally(ctx, add{N: 1}); err != nil {
		t.Fatalf("unconditional update while an older writer waits: %v", err)
	}
	if words := h.from(turnID(s)); len(words) != 0 {
		t.Fatalf("the writer said %q, want nothing", words)
	}
}

// A waiter that is younger than the writer (it started from a later
// revision) does not hold the writer back, nor does the writer's own word.
func TestYoungerWaitersAndOwnWordsDoNotHoldBack(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	hour := time.Hour // held back, the write would wait the test out
	s := newCounter(t, log, turns.Options{ClaimGrace: hour, StaleAfter: hour, Heartbeat: hour, MaxHoldBack: hour})
	h := listen(t, log)
	log.Announce([]byte("wait younger 999"))
	log.Announce(fmt.Appendf(nil, "wait %s 0", turnID(s)))
	waitFor(t, "the writer to hear the words", func() bool { return h.saw("wait younger 999") && len(h.from(turnID(s))) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := increment(ctx, s); err != nil {
		t.Fatal(err)
	}
	// A one-off write among looping waiters says `once` before it tries
	// (TestOneOffWriteAmongTurnsSaysSoBeforeItTries), and `done` after;
	// it says `wait` only if something held it back.
	for _, w := range h.from(turnID(s))[1:] {
		if kind := strings.Fields(w)[0]; kind != "once" && kind != "done" {
			t.Fatalf("the writer said %q after the forged word", h.from(turnID(s)))
		}
	}
}

// A waiter that goes silent (it died, or its "done" was lost) is forgotten
// after a while, and one that never stops talking holds a write back no
// longer than the bound: words can delay a write, never stop it.
func TestWaitsAreBounded(t *testing.T) {
	t.Parallel()
	t.Run("silent waiter", func(t *testing.T) {
		t.Parallel()
		log := memlog.New("t")
		s := newCounter(t, log, turns.Options{StaleAfter: 50 * time.Millisecond, Heartbeat: 20 * time.Millisecond,
			MaxHoldBack: time.Hour, BackToBack: time.Millisecond, ClaimGrace: time.Hour})
		h := listen(t, log)
		log.Announce([]byte("once ghost 0"))
		done := incrementAsync(s)
		waitFor(t, "the writer to hold back", func() bool { return len(h.from(turnID(s))) > 0 })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("endless waiter", func(t *testing.T) {
		t.Parallel()
		log := memlog.New("t")
		s := newCounter(t, log, turns.Options{StaleAfter: time.Hour, Heartbeat: 20 * time.Millisecond,
			MaxHoldBack: 100 * time.Millisecond, BackToBack: time.Millisecond, ClaimGrace: time.Hour})
		h := listen(t, log)
		log.Announce([]byte("once hog 0"))
		done := incrementAsync(s)
		waitFor(t, "the writer to hold back", func() bool { return len(h.from(turnID(s))) > 0 })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// rivalLog lets another writer get in before each of the next rivals
// appends, so that they lose.
type rivalLog struct {
	*memlog.Log
	mu     sync.Mutex
	rivals int
}

func (l *rivalLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	if err := l.letRivalIn(ctx); err != nil {
		return statesync.Position{}, err
	}
	return l.Log.AppendAfter(ctx, last, data)
}

// letRivalIn appends another writer's entry while rivals are left.
func (l *rivalLog) letRivalIn(ctx context.Context) error {
	l.mu.Lock()
	rival := l.rivals > 0
	l.rivals--
	l.mu.Unlock()
	if !rival {
		return nil
	}
	other, _ := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 100}})
	_, err := logtest.Append(l.Log, ctx, statesync.AnyRevision, other)
	return err
}

// A write that loses twice in a row says it waits, giving where the log was
// at its first try as its age; after it lands it keeps the turn for
// back-to-back writes and then says it is done.
func TestLoserAnnouncesAndTakesATurn(t *testing.T) {
	t.Parallel()
	log := &rivalLog{Log: memlog.New("t"), rivals: 1}
	s := newCounter(t, log, turns.Options{})
	h := listen(t, log)
	me := turnID(s)

	if err := <-incrementAsync(s); err != nil { // loses once: says nothing
		t.Fatal(err)
	}
	if words := h.from(me); len(words) != 0 {
		t.Fatalf("after one loss the writer said %q", words)
	}

	log.mu.Lock()
	log.rivals = 3
	log.mu.Unlock()
	base := lastRevision(t, log)
	if err := <-incrementAsync(s); err != nil { // loses three times
		t.Fatal(err)
	}
	// Its age is where the log was at its first try: the rival's entry.
	want := fmt.Sprintf("wait %s %d", me, base+1)
	if words := h.from(me); len(words) == 0 || !sameWord(words[0], want) {
		t.Fatalf("after three losses the writer said %q, want %q first", words, want)
	}
	// It holds the turn for a while, then gives it up.
	waitFor(t, "the writer to say it is done", func() bool { return h.saw("done " + me) })
	if got, want := value(t, s), counter(2+4*100); got != want {
		t.Fatalf("value %d, want %d", got, want)
	}
}

// Words from anyone, of any shape, never make a writer fail or panic.
func TestGarbageWordsAreIgnored(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, turns.Options{StaleAfter: 50 * time.Millisecond, Heartbeat: 20 * time.Millisecond,
		MaxHoldBack: 200 * time.Millisecond, BackToBack: time.Millisecond})
	for _, w := range []string{"", " ", "wait", "wait x", "wait x -1", "wait x 18446744073709551616",
		"done", "done x y", "wait x 1 2", strings.Repeat("wait ", 100), "\x00\xff wait", "wait \xff 0", "once", "once x", "once x -1", "once x 1 2 3"} {
		log.Announce([]byte(w))
	}
	for range 3 {
		if err := <-incrementAsync(s); err != nil {
			t.Fatal(err)
		}
	}
}

// A writer in a closed loop that gets its turn keeps it for TurnCommits
// (here turnCommits) back-to-back commits, or until its turn's time is up, then says it is
// done; one that does not write back to back (a person, a periodic refresh)
// says so as soon as it lands.
func TestTurnLastsForBackToBackWritesOnly(t *testing.T) {
	t.Parallel()
	const turnCommits = 8
	for _, tc := range []struct {
		name      string
		loop      time.Duration
		turn      time.Duration
		doneAfter int // writes after which the writer says done
	}{
		{"looping", time.Hour, time.Hour, turnCommits},
		{"pausing", time.Nanosecond, time.Hour, 1},
		{"looping past its time", time.Hour, time.Nanosecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := &rivalLog{Log: memlog.New("t")}
			s := newCounter(t, log, turns.Options{StaleAfter: time.Hour, Heartbeat: time.Hour, MaxHoldBack: time.Hour,
				BackToBack: tc.loop, TurnTime: tc.turn, TurnCommits: turnCommits})
			if _, err := increment(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			h := listen(t, log)
			me := turnID(s)
			log.mu.Lock()
			log.rivals = 2
			log.mu.Unlock()
			for i := 1; i <= turnCommits+1; i++ {
				if _, err := increment(context.Background(), s); err != nil {
					t.Fatal(err)
				}
				if said := h.saw("done " + me); said != (i >= tc.doneAfter) {
					t.Fatalf("after write %d: said done = %v, words %q", i, said, h.from(me))
				}
			}
		})
	}
}

// slowAndPatient: waiters are remembered, and keep their claim, for the
// test's length, and no two writes are back to back.
var slowAndPatient = turns.Options{StaleAfter: time.Hour, Heartbeat: time.Hour, MaxHoldBack: time.Hour,
	BackToBack: time.Nanosecond, ClaimGrace: time.Hour}

// holdBackBehindOlder has s write once, then start a write while an older
// writer ("older", since 0) waits, and returns when s has said that it
// holds back: what s says, and its write's result once "done older" is
// announced.
func holdBackBehindOlder(t *testing.T, log *memlog.Log, s *statesync.Synchronizer[counter]) (*heard, <-chan error) {
	t.Helper()
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	h := listen(t, log)
	log.Announce([]byte("once older 0"))
	done := incrementAsync(s)
	me := turnID(s)
	waitFor(t, "the writer to hold back", func() bool { return len(h.from(me)) > 0 })
	return h, done
}

// A write that waited for another writer's turn catches up before it
// tries: the log moved meanwhile, and a try on its old copy would be lost
// for sure.
func TestWaitedWriteCatchesUpBeforeItTries(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	var mu sync.Mutex
	var tries []statesync.Attempt
	s := newCounter(t, log, slowAndPatient, statesync.WithTrace(func(a statesync.Attempt) {
		mu.Lock()
		tries = append(tries, a)
		mu.Unlock()
	}))
	other := newCounter(t, struct{ statesync.Log }{log}, turns.Options{}) // a writer that takes no turns
	_, done := holdBackBehindOlder(t, log, s)
	for range 3 { // the older writer's turn
		if _, err := increment(context.Background(), other); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	tries = nil
	mu.Unlock()
	log.Announce([]byte("done older"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last, err := logtest.LastRevision(log, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tries) != 1 || tries[0].Conflict != nil || tries[0].Base != last-1 {
		t.Fatalf("tries after the wait: %+v; want one, on the other writer's last revision, that landed", tries)
	}
}

// A writer that starts to listen says hello, and every writer that waits
// or holds a turn says its wait again: the newcomer missed it, and would
// otherwise race a turn's holder that does not give way to it.
func TestWaitersAnswerANewcomer(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, slowAndPatient)
	h, done := holdBackBehindOlder(t, log, s)
	me := turnID(s)
	// The log moves on, so the newcomer's write is younger than the waiting
	// one (of writes of one age, the lower id goes first).
	if _, err := increment(context.Background(), newCounter(t, struct{ statesync.Log }{log}, turns.Options{})); err != nil {
		t.Fatal(err)
	}
	newcomer := newCounter(t, log, slowAndPatient)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := increment(ctx, newcomer); err == nil {
		t.Errorf("the newcomer's write went ahead of the writer that waits (words %q)", h.from(me))
	}
	if said := h.from(me); len(said) < 2 || said[1] != said[0] {
		t.Errorf("the waiting writer said %q; want its wait said again when the newcomer said hello", said)
	}
	log.Announce([]byte("done older"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A write that holds back joins the queue behind the waiters it heard,
// however old its copy: an old copy is no claim to go first.
func TestHoldingBackJoinsBehindTheWaiters(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, patient)
	h := listen(t, log)
	data, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for lastRevision(t, log) < 50 { // others wrote: s's copy is old
		if _, err := logtest.Append(log, context.Background(), statesync.AnyRevision, data); err != nil {
			t.Fatal(err)
		}
	}
	log.Announce([]byte("once older 0"))
	log.Announce([]byte("once newer 50"))
	done := incrementAsync(s)
	me := turnID(s)
	waitFor(t, "the writer to say it waits", func() bool { return h.saw(fmt.Sprintf("once %s 50", me)) })
	log.Announce([]byte("done older"))
	log.Announce([]byte("done newer"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// finishes runs fn in the background and reports whether it returned
// within d; the returned channel is closed once it does.
func finishes(fn func()) (<-chan struct{}, func(d time.Duration) bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	return done, func(d time.Duration) bool {
		select {
		case <-done:
			return true
		case <-time.After(d):
			return false
		}
	}
}

// A write that holds back for another writer's turn holds no lock while it
// waits: a fetch and an unconditional write (a lease's refresh) go on
// meanwhile.
func TestWaitingForATurnHoldsNoLock(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, slowAndPatient)
	h := listen(t, log)
	log.Announce([]byte("once older 0"))
	write := incrementAsync(s)
	waitFor(t, "the writer to hold back", func() bool { return len(h.from(turnID(s))) > 0 })
	ctx := context.Background()
	var waits []<-chan struct{}
	for name, op := range map[string]func(){
		"Fetch":                 func() { _ = s.Fetch(ctx) },
		"UpdateUnconditionally": func() { _, _ = s.UpdateUnconditionally(ctx, add{N: 10}) },
	} {
		done, within := finishes(op)
		if !within(time.Second) {
			t.Errorf("%s waited for the write that holds back for a turn", name)
		}
		waits = append(waits, done)
	}
	log.Announce([]byte("done older"))
	if err := <-write; err != nil {
		t.Fatal(err)
	}
	for _, w := range waits {
		<-w
	}
	if got := value(t, s); got != 11 {
		t.Fatalf("value %d, want 11", got)
	}
}

// A write under WithoutTurns holds back for nobody, nor waits behind a
// write of its synchronizer that does.
func TestWriteWithoutTurnsDoesNotWait(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, slowAndPatient)
	h := listen(t, log)
	log.Announce([]byte("once older 0"))
	write := incrementAsync(s)
	waitFor(t, "the writer to hold back", func() bool { return len(h.from(turnID(s))) > 0 })
	ctx, cancel := context.WithTimeout(turns.Without(context.Background()), time.Second)
	defer cancel()
	if _, err := increment(ctx, s); err != nil {
		t.Fatalf("a write without turns while an older writer waits: %v", err)
	}
	log.Announce([]byte("done older"))
	if err := <-write; err != nil {
		t.Fatal(err)
	}
	if got := value(t, s); got != 2 {
		t.Fatalf("value %d, want 2", got)
	}
}

// heldBack runs one increment through s and returns how long its tries
// held back in all.
func heldBack(t *testing.T, s *statesync.Synchronizer[counter], tries *[]statesync.Attempt, mu *sync.Mutex) time.Duration {
	t.Helper()
	mu.Lock()
	*tries = nil
	mu.Unlock()
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var d time.Duration
	for _, a := range *tries {
		d += a.HeldBack
	}
	return d
}

func tracedCounter(t *testing.T, log statesync.Log, o turns.Options) (*statesync.Synchronizer[counter], *[]statesync.Attempt, *sync.Mutex) {
	var mu sync.Mutex
	var tries []statesync.Attempt
	s := newCounter(t, log, o, statesync.WithTrace(func(a statesync.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, a)
	}))
	return s, &tries, &mu
}

// talk announces word every 5 ms until the test ends.
func talk(t *testing.T, log turns.Announcer, word func(i int) string) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			log.Announce([]byte(word(i)))
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// A waiter that is heard but never writes loses its claim within
// ClaimGrace, and is not waited for again while the log shows nothing of
// it; a talker that makes up a new name for each word holds a write back
// for at most twice ClaimGrace.
func TestWaiterThatNeverWritesLosesItsClaim(t *testing.T) {
	t.Parallel()
	const grace = 30 * time.Millisecond
	t.Run("one name", func(t *testing.T) {
		t.Parallel()
		log := memlog.New("t")
		s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace})
		talk(t, log, func(int) string { return "once spam0 0" })
		time.Sleep(20 * time.Millisecond)
		if d := heldBack(t, s, tries, mu); d < grace || d > 10*grace {
			t.Errorf("the first write held back %v; want about %v", d, grace)
		}
		for range 3 {
			if d := heldBack(t, s, tries, mu); d != 0 {
				t.Errorf("a later write held back %v for a claim that came to nothing", d)
			}
		}
	})
	t.Run("new names", func(t *testing.T) {
		t.Parallel()
		log := memlog.New("t")
		s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace})
		talk(t, log, func(i int) string { return fmt.Sprintf("once spam%d 0", i) })
		time.Sleep(20 * time.Millisecond)
		for range 3 {
			if d := heldBack(t, s, tries, mu); d < grace || d > 6*grace {
				t.Errorf("a write held back %v for made-up waiters; want about %v", d, 2*grace)
			}
		}
	})
}

// A waiter that shows entries of its own in the log keeps its claim past
// ClaimGrace, for one turn (TurnTime) before the write that waits for it.
func TestWaiterThatWritesKeepsItsClaimForOneTurn(t *testing.T) {
	t.Parallel()
	const grace, turn = 20 * time.Millisecond, 300 * time.Millisecond
	log := memlog.New("t")
	s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace, TurnTime: turn})
	data, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	talk(t, log, func(i int) string {
		if _, err := logtest.Append(log, turns.SpeakerContext(context.Background(), "writer"), statesync.AnyRevision, data); err != nil {
			t.Error(err)
		}
		return "once writer 0"
	})
	time.Sleep(20 * time.Millisecond)
	if d := heldBack(t, s, tries, mu); d < turn || d > 3*turn {
		t.Errorf("the write held back %v for a waiter that writes; want about %v", d, turn)
	}
}

// A waiter that says its tries are slow keeps its claim for about that
// long, past ClaimGrace: a writer whose own tries are quick does not cut
// short a slow one (a large snapshot) that would land.
func TestSlowWaiterKeepsItsClaimForItsTries(t *testing.T) {
	t.Parallel()
	const grace, slow = 20 * time.Millisecond, 150 * time.Millisecond
	log := memlog.New("t")
	s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace})
	data, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	start, landed := time.Now(), false
	talk(t, log, func(int) string {
		switch {
		case landed:
			return "done slow"
		case time.Since(start) < slow:
			return "once slow 0 200" // its tries take 200 ms, it says
		}
		if _, err := logtest.Append(log, turns.SpeakerContext(context.Background(), "slow"), statesync.AnyRevision, data); err != nil {
			t.Error(err)
		}
		landed = true
		return "done slow"
	})
	time.Sleep(20 * time.Millisecond)
	if d := heldBack(t, s, tries, mu); d < slow-40*time.Millisecond || d > time.Second {
		t.Errorf("the write held back %v for a waiter whose try took %v; want about that", d, slow)
	}
	if got := value(t, s); got != 2 {
		t.Errorf("value %d, want 2: the slow waiter's entry and the write", got)
	}
}

// Made-up waiters that say their tries are slow cost a write at most
// MaxClaimGrace, and each such claim that comes to nothing halves what the
// next can cost.
func TestMadeUpSlowWaitersCostLessEachTime(t *testing.T) {
	t.Parallel()
	const grace, most = 20 * time.Millisecond, 400 * time.Millisecond
	log := memlog.New("t")
	s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace, MaxClaimGrace: most})
	talk(t, log, func(i int) string { return fmt.Sprintf("once spam%d 0 60000", i) })
	time.Sleep(20 * time.Millisecond)
	var took []time.Duration
	for range 6 {
		took = append(took, heldBack(t, s, tries, mu))
	}
	t.Logf("writes held back %v", took)
	// One stall of a loaded machine may lengthen any write: the bound is
	// on the first, and on the least of the last three.
	if took[0] > 2*most || slices.Min(took[3:]) > 8*grace {
		t.Errorf("writes held back %v for made-up slow waiters; want at most %v, then less each time", took, most)
	}
}

// A writer that starts from the trust an earlier one left (a one-shot
// command run again) gives made-up waiters that say their tries are slow
// no more than that trust allows, where one that starts afresh gives the
// first of them up to MaxClaimGrace. Once the claims of several names have
// come to nothing, made-up words are evident and the trust it leaves is
// lower; one name's claims that come to nothing (an honest writer slower
// than it said, say) are not evidence enough to keep.
func TestWriterStartsFromTheTrustLeftToIt(t *testing.T) {
	t.Parallel()
	const grace, most = 20 * time.Millisecond, 600 * time.Millisecond
	little := &turns.Trust{Most: grace, At: time.Now(), MadeUp: []string{"a", "b", "c", "d"}}
	for name, trust := range map[string]*turns.Trust{"afresh": nil, "from little": little} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := memlog.New("t")
			m := turns.New(turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace, MaxClaimGrace: most, Trust: trust})
			var mu sync.Mutex
			var tries []statesync.Attempt
			s := statesync.New[counter](log, example.CounterCodec{}, statesync.WithTurns(m), statesync.WithTrace(func(a statesync.Attempt) {
				mu.Lock()
				defer mu.Unlock()
				tries = append(tries, a)
			}))
			if err := s.Initialize(context.Background(), example.CounterStart{}); err != nil {
				t.Fatal(err)
			}
			talk(t, log, func(i int) string { return fmt.Sprintf("once spam%d 0 60000", i) })
			time.Sleep(20 * time.Millisecond)
			d := heldBack(t, s, &tries, &mu)
			t.Logf("the first write held back %v", d)
			switch {
			case trust != nil && d > most/2:
				t.Errorf("a write started from little trust held back %v for made-up slow waiters; want a few times %v", d, grace)
			case trust == nil && d < most*3/4:
				t.Errorf("a write started afresh held back %v for a waiter that says its tries are slow; want about %v", d, most)
			}
			for range 4 {
				heldBack(t, s, &tries, &mu)
			}
			left, learned := m.Trust()
			if !learned || len(left.MadeUp) < 4 || left.Most > most*6/10 {
				t.Errorf("the trust left after made-up claims came to nothing is %v, naming %q (learned %v); want 4 names or more, and about half of %v at most", left.Most, left.MadeUp, learned, most)
			}
		})
	}
}

// One name whose claims of slow tries come to nothing (a large import
// that said its tries were quicker than they turned out) does not make
// made-up words evident: a later process must not start from the trust
// that cost, or it would cut that writer short again.
func TestOneNameComingToNothingIsNotForgery(t *testing.T) {
	t.Parallel()
	const grace, most = 20 * time.Millisecond, 600 * time.Millisecond
	log := memlog.New("t")
	m := turns.New(turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace, MaxClaimGrace: most, StaleAfter: 50 * time.Millisecond})
	s := statesync.New[counter](log, example.CounterCodec{}, statesync.WithTurns(m))
	if err := s.Initialize(context.Background(), example.CounterStart{}); err != nil {
		t.Fatal(err)
	}
	talk(t, log, func(int) string { return "once importer 0 60000" })
	time.Sleep(20 * time.Millisecond)
	for range 3 {
		if _, err := increment(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := m.Trust()
	if len(left.MadeUp) != 1 || left.Most >= most {
		t.Fatalf("trust left %v, naming %q; want less than %v, naming the importer", left.Most, left.MadeUp, most)
	}
	next, _ := turns.New(turns.Options{ClaimGrace: grace, MaxClaimGrace: most, Trust: &left}).Trust()
	if next.Most != most {
		t.Errorf("a manager started from the trust one name's claims cost trusts %v, want %v in full: one name is no evidence of made-up words", next.Most, most)
	}
}

// A turn is shorter when many writers wait: each waits for the turns of
// those before it about as long however many they are.
func TestTurnIsShorterWhenManyWait(t *testing.T) {
	t.Parallel()
	const turnCommits, waiters = 16, 8
	log := &rivalLog{Log: memlog.New("t")}
	s := newCounter(t, log, turns.Options{StaleAfter: time.Hour, Heartbeat: time.Hour, MaxHoldBack: time.Hour,
		BackToBack: time.Hour, TurnTime: time.Hour, TurnCommits: turnCommits, ClaimGrace: time.Hour})
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	h := listen(t, log)
	me := turnID(s)
	for i := range waiters { // younger than s: they wait behind it
		log.Announce(fmt.Appendf(nil, "wait young%d 1000000", i))
	}
	log.mu.Lock()
	log.rivals = 2
	log.mu.Unlock()
	want := turnCommits * 3 / waiters // a third of the writers' share
	for i := 1; i <= turnCommits; i++ {
		if _, err := increment(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if said := h.saw("done " + me); said != (i >= want) {
			t.Fatalf("after write %d: said done = %v, want done after %d writes with %d waiting", i, said, want, waiters)
		}
	}
}

// A waiter whose claim came to nothing once (cut short on a loaded
// machine, say) is heard again after a second, not ignored for good.
func TestVoidedWaiterIsHeardAgainSoon(t *testing.T) {
	t.Parallel()
	const grace, turn = 20 * time.Millisecond, 150 * time.Millisecond
	log := memlog.New("t")
	s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: 2 * time.Second, ClaimGrace: grace, TurnTime: turn})
	data, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Bool // the waiter writes, from the second claim on
	talk(t, log, func(int) string {
		if writes.Load() {
			if _, err := logtest.Append(log, turns.SpeakerContext(context.Background(), "slow"), statesync.AnyRevision, data); err != nil {
				t.Error(err)
			}
		}
		return "once slow 0"
	})
	time.Sleep(20 * time.Millisecond)
	if d := heldBack(t, s, tries, mu); d < grace || d > 10*grace {
		t.Fatalf("the first write held back %v for a waiter that showed nothing; want about %v", d, grace)
	}
	writes.Store(true)
	time.Sleep(1200 * time.Millisecond)
	if d := heldBack(t, s, tries, mu); d < turn/2 {
		t.Errorf("a write a second later held back %v for the waiter, which now writes; want about %v", d, turn)
	}
}

// A write that does not loop (a person's PUT among scripts' loops) goes
// before the looping writers that wait, rather than queue behind them all:
// it holds back for none of them, and a looping write holds back for it,
// however young it is (issue 22: such a write waits at most for the commit
// under way).
func TestOneOffWriteGoesBeforeLoopingWaiters(t *testing.T) {
	t.Parallel()
	hour := time.Hour
	o := turns.Options{ClaimGrace: hour, StaleAfter: hour, Heartbeat: hour, MaxHoldBack: hour, BackToBack: hour}

	t.Run("one-off", func(t *testing.T) {
		t.Parallel()
		log := memlog.New("t")
		o := o
		o.BackToBack = time.Nanosecond // no write loops
		s := newCounter(t, log, o)
		listen(t, log)
		log.Announce([]byte("wait looper 0")) // older, and never done
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := increment(ctx, s); err != nil {
			t.Fatalf("a one-off write behind a looping waiter: %v", err)
		}
	})

	t.Run("looping", func(t *testing.T) {
		t.Parallel()
		log := memlog.New("t")
		s := newCounter(t, log, o)
		h := listen(t, log)
		me := turnID(s)
		if _, err := increment(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		log.Announce([]byte("once person 1000000")) // younger, but does not loop
		done := incrementAsync(s)                   // back to back with the first
		waitFor(t, "the looping write to hold back", func() bool { return h.saw(fmt.Sprintf("wait %s 1", me)) || len(h.from(me)) > 0 })
		if got := value(t, s); got != 1 {
			t.Fatalf("value %d: the looping write went before the one-off waiter", got)
		}
		log.Announce([]byte("done person"))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A one-off write among writers taking turns says `once` before its first
// try and catches up first: a try on its old copy would be lost for sure,
// and would leave the holder's next write under way before the word.
func TestOneOffWriteAmongTurnsSaysSoBeforeItTries(t *testing.T) {
	t.Parallel()
	log := &countingLog{Log: memlog.New("t")}
	hour := time.Hour
	s := newCounter(t, log, turns.Options{ClaimGrace: hour, StaleAfter: hour, Heartbeat: hour, MaxHoldBack: hour, BackToBack: time.Nanosecond})
	h := listen(t, log)
	me := turnID(s)
	other, _ := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 100}})
	for range 3 { // the loopers' writes since s's copy
		if _, err := logtest.Append(log.Log, context.Background(), statesync.AnyRevision, other); err != nil {
			t.Fatal(err)
		}
	}
	log.Announce([]byte("wait looper 0"))
	waitFor(t, "the writer to hear the looper", func() bool { return h.saw("wait looper 0") })
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := value(t, s); got != 301 {
		t.Fatalf("value %d, want 301", got)
	}
	if n := log.appends.Load(); n != 1 {
		t.Fatalf("the one-off write made %d appends; want 1, on a copy caught up first", n)
	}
	if mine := h.from(me); len(mine) == 0 || strings.Fields(mine[0])[0] != "once" {
		t.Fatalf("the one-off write said %q; want once first", mine)
	}
}

// The age a one-off write says before its first try is its copy's, an old
// one; once caught up it is where the log is, and a write that then holds
// back says that at once: an old copy is no claim to go before the one-off
// writes that waited longer.
func TestOneOffWriteSaysTheLogsAgeOnceCaughtUp(t *testing.T) {
	t.Parallel()
	log := &hookedLog{Log: memlog.New("t")}
	hour := time.Hour
	s := newCounter(t, log, turns.Options{ClaimGrace: hour, StaleAfter: hour, Heartbeat: hour, MaxHoldBack: hour, BackToBack: time.Nanosecond})
	h := listen(t, log)
	me := turnID(s)
	stale := lastRevision(t, log)
	other, _ := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	for range 50 {
		if _, err := logtest.Append(log.Log, context.Background(), statesync.AnyRevision, other); err != nil {
			t.Fatal(err)
		}
	}
	end := lastRevision(t, log)
	log.Announce([]byte("wait looper 0"))
	waitFor(t, "the writer to hear the looper", func() bool { return h.saw("wait looper 0") })
	// An older one-off write is heard while the writer catches up.
	log.onLast(func() { log.Announce([]byte("once older 0")) })
	done := incrementAsync(s)
	waitFor(t, "the writer to say the log's age", func() bool { return h.saw(fmt.Sprintf("once %s %d", me, end)) })
	if !h.saw(fmt.Sprintf("once %s %d", me, stale)) {
		t.Fatalf("the writer said %q; want its copy's age %d first", h.from(me), stale)
	}
	log.Announce([]byte("done older"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A one-off write whose time runs out while it catches up before its first
// try (others take turns) says it was held back, not that the log is
// silent.
func TestOneOffWriteCutShortCatchingUpSaysSo(t *testing.T) {
	t.Parallel()
	log := &hookedLog{Log: memlog.New("t")}
	s := newCounter(t, log, turns.Options{BackToBack: time.Nanosecond})
	h := listen(t, log)
	log.Announce([]byte("wait looper 0"))
	waitFor(t, "the writer to hear the looper", func() bool { return h.saw("wait looper 0") })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	log.onLast(func() { <-ctx.Done() }) // the server answers too late
	_, err := increment(ctx, s)
	if _, ok := errors.AsType[*turns.ContendedError](err); !ok {
		t.Fatalf("got %v; want a ContendedError", err)
	}
}

// hookedLog runs a hook, once, at the next LastPosition.
type hookedLog struct {
	*memlog.Log
	mu   sync.Mutex
	hook func()
}

func (l *hookedLog) onLast(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hook = fn
}

func (l *hookedLog) LastPosition(ctx context.Context) (statesync.Position, error) {
	l.mu.Lock()
	hook := l.hook
	l.hook = nil
	l.mu.Unlock()
	if hook != nil {
		hook()
	}
	return l.Log.LastPosition(ctx)
}

// countingLog counts the appends made through it.
type countingLog struct {
	*memlog.Log
	appends atomic.Int64
}

func (l *countingLog) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	l.appends.Add(1)
	return l.Log.AppendAfter(ctx, last, data)
}

// A looping write that keeps losing waits as a one-off write from its
// fourth lost try on: one-off writes, which go before looping ones, must
// not starve it (a slow import among a person's PUTs).
func TestLoopingWriteThatKeepsLosingWaitsAsAOneOff(t *testing.T) {
	t.Parallel()
	log := &rivalLog{Log: memlog.New("t")}
	s := newCounter(t, log, turns.Options{BackToBack: time.Hour})
	h := listen(t, log)
	me := turnID(s)
	if _, err := increment(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	log.rivals = 5
	log.mu.Unlock()
	if _, err := increment(context.Background(), s); err != nil { // back to back
		t.Fatal(err)
	}
	var kinds []string
	for _, w := range h.from(me) {
		kinds = append(kinds, strings.Fields(w)[0])
	}
	if i := slices.Index(kinds, "once"); i < 0 || !slices.Contains(kinds[:i], "wait") {
		t.Fatalf("a looping write that lost 5 tries said %q; want wait, then once", h.from(me))
	}
}

// Made-up slow waiters that stop being first before their claim is judged
// (each word a new name that goes first, or a name said once that goes
// stale) still cost a write at most MaxHoldBack and MaxClaimGrace: their
// grace is not added up, one waiter after another, until the write's
// context ends. A name that goes stale is judged as it goes, and one that
// a newer name displaced when that one's claim is judged, so each such
// claim halves what the next can cost, as a voided one does.
func TestSlowWaitersThatStopBeingFirstDoNotAddUp(t *testing.T) {
	t.Parallel()
	const grace, most, hold = 20 * time.Millisecond, 400 * time.Millisecond, 200 * time.Millisecond
	for name, word := range map[string]func(i int) string{
		"each a new first": func(i int) string { return fmt.Sprintf("once spam%09d 0 60000", 999_999_999-i) },
		"each said once":   func(i int) string { return fmt.Sprintf("once spam%09d 0 60000", i) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := memlog.New("t")
			o := turns.Options{MaxHoldBack: hold, ClaimGrace: grace, MaxClaimGrace: most, StaleAfter: 10 * time.Millisecond}
			s := newCounter(t, log, o)
			talk(t, log, word)
			time.Sleep(20 * time.Millisecond)
			var took []time.Duration
			for i := range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				_, err := increment(ctx, s)
				cancel()
				took = append(took, time.Since(start).Round(time.Millisecond))
				if err != nil || took[i] > 2*(hold+most) {
					t.Fatalf("write %d took %v (%v) under made-up slow waiters; want at most about %v", i, took[i], err, hold+most)
				}
			}
			t.Logf("writes took %v", took)
			// One stall of a loaded machine may lengthen any write: the
			// bound is on the least of the last three.
			if slices.Min(took[1:]) > 8*grace {
				t.Errorf("writes took %v: want less after the first's claims came to nothing", took)
			}
		})
	}
}

// A write whose context ends while it holds back for older writers' turns
// says so (a ContendedError with how long it held back), so that it is not
// taken for a server that did not answer.
func TestWriteCutShortWhileHoldingBackSaysSo(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	o := patient
	o.MaxHoldBack = time.Hour
	s := newCounter(t, log, o)
	talk(t, log, func(int) string { return "once old 0" })
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := increment(ctx, s)
	var contended *turns.ContendedError
	if !errors.As(err, &contended) || contended.HeldBack < 100*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write held back until its context ended gave %v; want a ContendedError with the time it held back, wrapping the deadline", err)
	}
}

// A new made-up name with each word, each sorting before the last, costs
// a write about twice ClaimGrace, as new names that do not go first do
// (TestWaiterThatNeverWritesLosesItsClaim): the claim of a first that a
// newer name displaced is judged all the same, and comes to nothing.
func TestNewFirstWithEachWordCostsLittle(t *testing.T) {
	t.Parallel()
	const grace, hold = 20 * time.Millisecond, 2 * time.Second
	log := memlog.New("t")
	s, tries, mu := tracedCounter(t, log, turns.Options{MaxHoldBack: hold, ClaimGrace: grace})
	talk(t, log, func(i int) string { return fmt.Sprintf("once spam%09d 0", 999_999_999-i) })
	time.Sleep(20 * time.Millisecond)
	var took []time.Duration
	for range 3 {
		took = append(took, heldBack(t, s, tries, mu))
	}
	// One stall of a loaded machine may lengthen any write.
	if slices.Min(took) > 6*grace || slices.Max(took) > hold/2 {
		t.Errorf("writes held back %v for a new made-up first with each word; want about %v each", took, 2*grace)
	}
}

// A waiter's age is a revision the log had reached when it spoke: one past
// the log is made up, and a write that holds back does not take it up as
// its own age (it would go last, and its words would spread the made-up
// age to every writer that hears them, leaving ties broken by id).
func TestMadeUpAgePastTheLogIsNotTakenUp(t *testing.T) {
	t.Parallel()
	log := memlog.New("t")
	s := newCounter(t, log, patient)
	h := listen(t, log)
	log.Announce([]byte("wait liar 18446744073709551615"))
	log.Announce([]byte("once older 0"))
	done := incrementAsync(s)
	me := turnID(s)
	waitFor(t, "the writer to say it waits", func() bool { return len(h.from(me)) > 0 })
	rev := lastRevision(t, log)
	for _, w := range h.from(me) {
		if age, _ := strconv.ParseUint(strings.Fields(w)[2], 10, 64); age > rev {
			t.Errorf("the writer said %q with the log at %d: it took up a made-up age", w, rev)
		}
	}
	log.Announce([]byte("done older"))
	log.Announce([]byte("done liar"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// fixedCopy is a copy that stands at one revision and is always current.
type fixedCopy struct {
	sync.Mutex
	rev uint64
}

func (c *fixedCopy) Revision() uint64                  { return c.rev }
func (c *fixedCopy) CatchUp(ctx context.Context) error { return nil }

// A one-off write that another writer committed (combining) says done at
// once: the writes it goes before would otherwise wait for an entry of its
// own that never comes, for a claim's grace. A looping one keeps its word
// for its next write, for BackToBack.
func TestOneOffWriteCommittedByAnotherSaysDoneAtOnce(t *testing.T) {
	t.Parallel()
	hour := time.Hour
	for _, looping := range []bool{false, true} {
		log := memlog.New("t")
		h := listen(t, log)
		m := turns.New(turns.Options{ClaimGrace: hour, StaleAfter: hour, Heartbeat: hour, MaxHoldBack: 10 * time.Millisecond, BackToBack: hour, AnnounceAfter: 1})
		cp := &fixedCopy{rev: 1}
		if looping {
			w := m.Start(context.Background(), log, cp)
			w.End(true) // a write just landed: the next one loops
		}
		log.Announce([]byte("wait looper 0"))
		waitFor(t, "the writer to hear the looper", func() bool { return h.saw("wait looper 0") })
		cp.Lock()
		w := m.Start(context.Background(), log, cp)
		_ = w.HoldBack(context.Background())
		w.Lost(2)
		_ = w.HoldBack(context.Background())
		cp.Unlock()
		waitFor(t, "the write to say it waits", func() bool { return len(h.from(m.ID())) > 0 })
		w.EndCommitted()
		time.Sleep(50 * time.Millisecond)
		said := h.from(m.ID())
		done := strings.Fields(said[len(said)-1])[0] == "done"
		if done == looping {
			t.Errorf("looping %v: after the write was committed by another, it said %q; want done %v", looping, said, !looping)
		}
	}
}
