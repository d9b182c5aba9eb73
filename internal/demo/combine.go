package demo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/asciitable"
	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Combining is what the writers of one run of the combine scenario did.
type Combining struct {
	// On: the writers combined (the default); off, they only took turns.
	On      bool
	Writers []CombiningWriter
	PUTs    int
	// Carried: PUTs that another writer's entry carried.
	Carried int
	// Entries: the entries the run appended (the initial snapshot aside);
	// Logged: the PUTs they hold, which is PUTs when no PUT was lost or
	// committed twice.
	Entries, Logged int
	// Carrying: entries that carry PUTs other writers handed.
	Carrying int
}

// CombiningWriter is what one writer of the combine scenario did.
type CombiningWriter struct {
	Name    string
	PUTs    int
	Carried int
	// MostTries is the most tries one of its PUTs took (a carried PUT's
	// count includes the handing).
	MostTries int
	// Last is its key's value once it caught up after the run, at
	// revision At.
	Last string
	At   uint64
}

// PUTsPerEntry is the run's PUTs over its entries.
func (c Combining) PUTsPerEntry() float64 { return ratio(c.PUTs, c.Entries) }

// Worst is the writer whose PUT took the most tries.
func (c Combining) Worst() CombiningWriter {
	return mostTries(c.Writers, func(w CombiningWriter) int { return w.MostTries })
}

// combine: writers PUT their own keys back to back, combining as every
// command does, and the log is read back to count what it holds; then the
// same without combining, for comparison.
func combine(ctx context.Context, r *run) error {
	d := r.runLength()
	r.say("Scenario combine: %d writers each PUT their own key back to back for %s (longer if no PUT was carried yet), combining as every command does.", r.o.Writers, d)
	r.say("Every append is conditional on the whole stream, so writers of different keys still refuse each other's appends.")
	r.say("Combining: a writer that keeps losing hands its PUT (by a request, outside the stream) to the writer of the newest entry,")
	r.say("which commits it inside its own next entry; the hander reads that entry, finds its PUT there, and is done.")
	if err := r.nextStep("the writers PUT at once, each its own key, combining"); err != nil {
		return err
	}
	on, err := r.combineRun(ctx, true, d)
	if err != nil {
		return err
	}
	for _, w := range on.Writers {
		r.say("  %s: %d PUTs, %d of them carried by another writer's entry; most tries for one PUT: %d", w.Name, w.PUTs, w.Carried, w.MostTries)
	}
	if err := r.nextStep("what the log got"); err != nil {
		return err
	}
	r.say("  The log holds %d PUTs in %d entries: %.2f PUTs per entry.", on.Logged, on.Entries, on.PUTsPerEntry())
	r.say("  %d PUTs were carried, by %d entries that carry PUTs other writers handed.", on.Carried, on.Carrying)
	r.say("  The most tries one PUT took: %d (%s).", on.Worst().MostTries, on.Worst().Name)
	if err := r.nextStep("every writer caught up: each key holds its writer's last PUT"); err != nil {
		return err
	}
	for _, w := range on.Writers {
		r.say("  %s: %s = '%s' at revision %d, the last of its %d PUTs", w.Name, w.Name, w.Last, w.At, w.PUTs)
	}
	if err := r.nextStep("the same without combining (--combine=false: the writers only take turns), side by side"); err != nil {
		return err
	}
	off, err := r.combineRun(ctx, false, d)
	if err != nil {
		return err
	}
	r.compareCombining(on, off)
	return nil
}

// combineRun has the writers PUT their own keys for d on a fresh config,
// combining or not, and counts what they did and what the log holds. The
// combining run's tries around its first carried PUT, and their entries,
// are the ones drawn.
func (r *run) combineRun(ctx context.Context, on bool, d time.Duration) (Combining, error) {
	name := "combine-off"
	if on {
		name = "combine-on"
	}
	config := r.newConfig(name)
	ws := make([]*writer, r.o.Writers)
	for i := range ws {
		w, err := r.openLane(ctx, config, namesOfWriters[i], i, openOptions{combine: on})
		if err != nil {
			return Combining{}, err
		}
		ws[i] = w
	}
	defer func() {
		for _, w := range ws {
			w.stop()
		}
	}()
	from := len(r.rec.tries())
	enough := func() bool { return true }
	if on {
		// A run that happened to carry nothing would show nothing: it
		// goes on, up to 5 times as long, until a PUT is carried.
		enough = func() bool { return r.carriedSince(from) }
	}
	puts, err := r.loopOwnKeys(ws, d, enough)
	if err != nil {
		return Combining{}, err
	}
	all := r.rec.tries()[from:]
	c := combiningOf(all, ws, puts)
	c.On = on
	hctx, cancel := ctxFor(r)
	changes, err := ws[0].cfg.History(hctx, "", 100_000)
	cancel()
	if err != nil {
		return Combining{}, err
	}
	tape := TapeOf(changes, r.res.Timeline.LaneOf)
	c.countEntries(changes, tape)
	if err := r.lastPutsHold(ws, &c); err != nil {
		return Combining{}, err
	}
	if on {
		r.res.Combining = &c
		r.drawn = carriedWindow(all)
		r.res.Timeline.Tape = tapeOfWindow(tape, r.drawn)
	} else {
		r.res.CombiningOff = &c
	}
	return c, nil
}

// runLength is how long the writers of turns and combine loop.
func (r *run) runLength() time.Duration {
	return max(time.Duration(float64(time.Second)/r.o.Speed), 200*time.Millisecond)
}

// carriedSince: a try recorded after the first from was carried.
func (r *run) carriedSince(from int) bool {
	return slices.ContainsFunc(r.rec.tries()[from:], func(t timeline.Try) bool { return t.Outcome == timeline.Carried })
}

// loopOwnKeys has each writer PUT its own key (its name) with 1, 2, ...
// all at once, until d has passed and enough says so (or 5 times d has),
// and returns how many PUTs each made.
func (r *run) loopOwnKeys(ws []*writer, d time.Duration, enough func() bool) ([]int, error) {
	puts := make([]int, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	start := time.Now()
	end, last := start.Add(d), start.Add(5*d)
	var done atomic.Bool
	going := func() bool {
		now := time.Now()
		if done.Load() || now.After(last) {
			return false
		}
		if now.Before(end) {
			return true
		}
		done.Store(enough())
		return !done.Load()
	}
	for i, w := range ws {
		wg.Go(func() {
			errs[i] = w.do("PUT "+w.name, func(c *sharedconfig.Config) error {
				for going() {
					ctx, cancel := ctxFor(r)
					_, err := c.Put(ctx, w.name, strconv.Itoa(puts[i]+1))
					cancel()
					if err != nil {
						return err
					}
					puts[i]++
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ws[i].name, err)
		}
	}
	return puts, nil
}

func combiningOf(tries []timeline.Try, ws []*writer, puts []int) Combining {
	var c Combining
	for i, w := range ws {
		cw := CombiningWriter{Name: w.name, PUTs: puts[i]}
		for _, tr := range tries {
			if tr.Lane != w.lane || (tr.Outcome != timeline.Committed && tr.Outcome != timeline.Carried) {
				continue
			}
			if tr.Outcome == timeline.Carried {
				cw.Carried++
			}
			cw.MostTries = max(cw.MostTries, tr.N)
		}
		c.Writers = append(c.Writers, cw)
		c.PUTs += cw.PUTs
		c.Carried += cw.Carried
	}
	return c
}

// countEntries counts the run's entries, the PUTs they hold, and those
// that carry PUTs (tape is changes drawn).
func (c *Combining) countEntries(changes []sharedconfig.Change, tape []timeline.Entry) {
	for i, e := range tape {
		if e.Snapshot {
			continue
		}
		c.Entries++
		for _, op := range changes[i].Ops {
			if op.Kind == "put" {
				c.Logged++
			}
		}
		if len(e.Carries) > 0 {
			c.Carrying++
		}
	}
}

// carriedWindow is triesDrawn of tries, from a few before the first
// carried one (from the start if none was).
func carriedWindow(tries []timeline.Try) []timeline.Try {
	start := 0
	for i, tr := range tries {
		if tr.Outcome == timeline.Carried {
			start = max(i-6, 0)
			break
		}
	}
	end := min(start+triesDrawn, len(tries))
	return tries[start:end]
}

// tapeOfWindow is the part of tape that the tries drawn were based on,
// landed in or were carried by.
func tapeOfWindow(tape []timeline.Entry, drawn []timeline.Try) []timeline.Entry {
	if len(drawn) == 0 {
		return nil
	}
	lo, hi := drawn[0].Base+1, uint64(0)
	for _, tr := range drawn {
		lo, hi = min(lo, tr.Base+1), max(hi, tr.Base, tr.Revision, tr.Current)
	}
	var out []timeline.Entry
	for _, e := range tape {
		if e.Revision >= lo && e.Revision <= hi && len(out) < 2*triesDrawn {
			out = append(out, e)
		}
	}
	return out
}

// lastPutsHold has every writer catch up and checks that each key holds
// the last value its writer put: no PUT, carried or not, was lost.
func (r *run) lastPutsHold(ws []*writer, c *Combining) error {
	for i, w := range ws {
		if err := w.do("REFRESH", refresh(r)); err != nil {
			return err
		}
		cw := &c.Writers[i]
		cw.Last, _ = w.cfg.Get(w.name)
		cw.At = w.cfg.State().Revision()
		if want := strconv.Itoa(cw.PUTs); cw.Last != want {
			return fmt.Errorf("%s's key holds '%s', not its last PUT's '%s'", w.name, cw.Last, want)
		}
	}
	return nil
}

func (r *run) compareCombining(on, off Combining) {
	rows := [][]string{
		{"PUTs", strconv.Itoa(on.PUTs), strconv.Itoa(off.PUTs)},
		{"entries", strconv.Itoa(on.Entries), strconv.Itoa(off.Entries)},
		{"PUTs per entry", fmt.Sprintf("%.2f", on.PUTsPerEntry()), fmt.Sprintf("%.2f", off.PUTsPerEntry())},
		{"PUTs carried by another writer's entry", strconv.Itoa(on.Carried), strconv.Itoa(off.Carried)},
		{"most tries for one PUT", fmt.Sprintf("%s: %d", on.Worst().Name, on.Worst().MostTries), fmt.Sprintf("%s: %d", off.Worst().Name, off.Worst().MostTries)},
	}
	asciitable.Render(r.o.Out, []string{"", "combining", "turns only"}, rows)
	r.say("The timeline below draws %d tries of the run with combining, from a few before its first carried PUT, and the entries they made.", triesDrawn)
}
