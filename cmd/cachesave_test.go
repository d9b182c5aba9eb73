package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
	"github.com/sharedconfig/sharedconfig/repl"
)

// within gives up at its due: an encoding still under way then writes
// nothing, even once it is over; a due already past starts none; a write
// begun before the due is waited for.
func TestWithinKeepsToItsDue(t *testing.T) {
	t.Parallel()
	var encoded, wrote atomic.Int32
	encode := func(d time.Duration) func() func() {
		return func() func() {
			time.Sleep(d)
			encoded.Add(1)
			return func() { wrote.Add(1) }
		}
	}
	<-within(time.Now().Add(-time.Millisecond), nil, encode(0))
	if encoded.Load() != 0 || wrote.Load() != 0 {
		t.Fatalf("a due already past: %d encoded, %d written; want nothing started", encoded.Load(), wrote.Load())
	}

	start := time.Now()
	done := within(start.Add(50*time.Millisecond), nil, encode(time.Second))
	if took := time.Since(start); took > 600*time.Millisecond {
		t.Fatalf("an encoding of 1s with 50ms left: within returned after %v; want it at its due", took)
	}
	<-done
	if encoded.Load() != 1 || wrote.Load() != 0 {
		t.Fatalf("an encoding over after the due: %d encoded, %d written; want it encoded and not written", encoded.Load(), wrote.Load())
	}

	start = time.Now()
	slowWrite := func() func() {
		return func() { time.Sleep(300 * time.Millisecond); wrote.Add(1) }
	}
	within(start.Add(50*time.Millisecond), nil, slowWrite)
	if wrote.Load() != 1 || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("a write begun before the due: within returned after %v with %d written; want it waited for", time.Since(start), wrote.Load())
	}
}

// A signal during a save with time left cuts the wait to repl.ExitBudget
// from then, as a leaving process takes: the encoding then writes nothing.
func TestWithinKeepsToTheExitBudgetOnceSignalled(t *testing.T) {
	t.Parallel()
	var wrote atomic.Int32
	stopped := make(chan struct{})
	time.AfterFunc(50*time.Millisecond, func() { close(stopped) })
	start := time.Now()
	done := within(start.Add(time.Minute), stopped, func() func() {
		time.Sleep(repl.ExitBudget + time.Second)
		return func() { wrote.Add(1) }
	})
	if took := time.Since(start); took > repl.ExitBudget+500*time.Millisecond {
		t.Fatalf("an encoding of %v, a minute left, signalled after 50ms: within returned after %v; want ExitBudget (%v) after the signal", repl.ExitBudget+time.Second, took, repl.ExitBudget)
	}
	<-done
	if wrote.Load() != 0 {
		t.Fatal("an encoding over after the signal's budget was written")
	}
}

// A session whose due has passed (its command used up its --timeout)
// leaves no copy, however much its config moved on; one with time left
// saves as before.
func TestSaveAfterItsDueWritesNothing(t *testing.T) {
	e := newIndexEnv(t)
	w := e.open("writer")
	defer w.Close()
	for i := range 50 {
		if _, err := w.Put(e.ctx, fmt.Sprint("k", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	c := e.open("reader")
	defer c.Close()
	r := e.flags.replicaFor(e.nc, e.log())
	r.save(c, time.Now().Add(-time.Millisecond), nil)
	if _, err := os.Stat(r.path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a save past its due: the cache file %v; want none written", err)
	}
	r.save(c, time.Now().Add(time.Minute), nil)
	if _, rev, err := replicacache.Load(r.path, r.stamp); err != nil || rev != c.State().Revision() {
		t.Fatalf("a save with time left: revision %d, %v; want the copy at %d", rev, err, c.State().Revision())
	}
}
