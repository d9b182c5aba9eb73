package turns

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Words from ids nobody writes as cannot make a manager hold more than
// maxRemembered waiters, however many there are.
func TestMadeUpWaitersAreBounded(t *testing.T) {
	c := New(Options{})
	for i := range 10 * maxRemembered {
		c.hear(fmt.Appendf(nil, "wait %040d 1", i))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.waiting); n > maxRemembered || n == 0 {
		t.Errorf("%d waiters remembered, want 1 to %d", n, maxRemembered)
	}
}

// A flood of hellos, which anyone can say, costs a waiter one answer per
// helloEvery, not one per hello; the first is answered at once.
func TestHelloFloodIsAnsweredBounded(t *testing.T) {
	c := New(Options{})
	words := &countingAnnouncer{}
	c.mu.Lock()
	c.announcer, c.mine = words, []byte("wait me 1 0")
	c.mu.Unlock()
	const hellos = 1000
	start := time.Now()
	for i := range hellos {
		c.hear(fmt.Appendf(nil, "hello forger%d", i))
	}
	if n := words.count(); n != 1 {
		t.Fatalf("%d answers right after the first hello, want 1", n)
	}
	elapsed := time.Since(start)
	time.Sleep(2 * helloEvery) // the answer due at the end of the interval
	// One at once, then at most one per helloEvery while the flood lasted,
	// and one at its end.
	if n, most := words.count(), 2+int(elapsed/helloEvery); n < 2 || n > most {
		t.Errorf("%d hellos in %s were answered %d times; want 2 to %d", hellos, elapsed, n, most)
	}
}

// countingAnnouncer counts the words said through it.
type countingAnnouncer struct {
	mu    sync.Mutex
	words int
}

func (a *countingAnnouncer) Announce([]byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.words++
	return nil
}

func (a *countingAnnouncer) Listen(func([]byte)) (func(), error) { return func() {}, nil }

func (a *countingAnnouncer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.words
}

// The waiter a write judges first is the one that goes first among those
// before it: a one-off waiter (once) before an older looping one, which
// itself holds back for the one-off and so shows nothing until it has
// gone. Judging the looping one first voided an honest waiter's claim.
func TestFirstWaiterIsTheOneThatGoesFirst(t *testing.T) {
	c := New(Options{})
	c.hear([]byte("wait looper 990 0"))
	c.hear([]byte("once person 1000 0"))
	w := &Write{c: c, since: 995}
	n, first, _, _ := c.ahead(w, time.Now())
	if n != 2 || first.id != "person" {
		t.Errorf("%d waiters ahead, first %q; want 2, the one-off person first", n, first.id)
	}
}

// A made-up first past maxDisplaced counts as a claim come to nothing for
// the trust words earn too: else a flood that overflows the bound before
// any claim is judged leaves every later write the whole grace the words
// claim, as if none of them had been judged.
func TestClaimsPastTheDisplacedBoundCostTrust(t *testing.T) {
	c := New(Options{ClaimGrace: 20 * time.Millisecond, MaxClaimGrace: 400 * time.Millisecond})
	before, earned := c.claimGrace(time.Minute)
	w := &Write{c: c, first: "spam", firstAt: time.Now(), earned: earned, displaced: make([]displacedClaim, maxDisplaced)}
	w.displace(time.Now())
	if after, _ := c.claimGrace(time.Minute); after > before*6/10 {
		t.Errorf("a word claiming slow tries earns %v after a made-up first past the bound came to nothing, %v before; want about half at most", after, before)
	}
	if !w.passed["spam"] {
		t.Error("the made-up first past the bound is still waited for")
	}
}

// FuzzHear: no word, which anyone can say, panics a manager, and none
// makes it remember more than maxRemembered waiters or a wait longer than
// MaxClaimGrace.
func FuzzHear(f *testing.F) {
	for _, w := range []string{"wait a 1", "once a 1 20", "done a", "hello a", "wait a 18446744073709551615 4294967295", "wait  a\t1"} {
		f.Add([]byte(w))
	}
	f.Fuzz(func(t *testing.T, word []byte) {
		c := New(Options{})
		c.hear(word)
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.waiting) > maxRemembered {
			t.Fatalf("%q: %d waiters", word, len(c.waiting))
		}
		for id, w := range c.waiting {
			if w.try > c.opt.MaxClaimGrace || w.try < 0 {
				t.Fatalf("%q: waiter %q says its tries take %v, past %v", word, id, w.try, c.opt.MaxClaimGrace)
			}
		}
	})
}
