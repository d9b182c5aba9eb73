// Package demo runs scripted scenarios of optimistic concurrency against a
// real NATS server: writers are goroutines, each with its own connection
// and synchronizer, making real conditional appends on a fresh config, and
// the run is narrated step by step in words that do not depend on timing.
// What the writers did is recorded, from the synchronizer's trace of every
// try and from the log itself, as a timeline (package timeline).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Scenarios are the scenarios' names, in the order help lists them.
var Scenarios = []string{"race", "stale", "lease", "turns", "compact", "combine"}

// Options configure a run.
type Options struct {
	// Dial opens a new connection to the server; each writer gets its own.
	Dial func(ctx context.Context) (*nats.Conn, error)
	// Out hears the narration.
	Out io.Writer
	// Writers is how many writers race (race, turns, combine); at least 2.
	Writers int
	// Speed divides the pauses between steps (and the turns scenario's
	// runs): 2 is twice as fast.
	Speed float64
	// Step, if set, is called before each step after the first (to wait
	// for Enter); an error ends the run.
	Step func() error
	// Scope is the scope of the fresh configs the run makes.
	Scope string
	// Keep leaves the configs on the server; otherwise they are removed.
	Keep bool
	// Timeout bounds each operation.
	Timeout time.Duration
}

// maxSpeed bounds Options.Speed: beyond it every pause is already nothing.
const maxSpeed = 1000

// MaxWriters bounds Writers: each is a lane of a drawing 100 columns wide.
const MaxWriters = 8

// Result is what a run did.
type Result struct {
	Timeline *timeline.Timeline
	// Configs are the names of the configs the run made (in Options.Scope).
	Configs []string
	// Sides are the turns scenario's two runs: without and with turns.
	Sides []Side
	// Combining and CombiningOff are the combine scenario's two runs: with
	// combining and without.
	Combining, CombiningOff *Combining
}

// ErrUnknownScenario: no scenario has that name.
var ErrUnknownScenario = errors.New("unknown scenario")

// Run runs the scenario named name.
func Run(ctx context.Context, name string, o Options) (*Result, error) {
	scenarios := map[string]func(context.Context, *run) error{
		"race": race, "stale": stale, "lease": leaseScenario, "turns": turns, "compact": compact, "combine": combine,
	}
	fn, ok := scenarios[name]
	if !ok {
		return nil, fmt.Errorf("%w '%s': use one of %s", ErrUnknownScenario, name, strings.Join(Scenarios, ", "))
	}
	if o.Writers < 2 || o.Writers > MaxWriters {
		return nil, fmt.Errorf("--writers %d: use 2 to %d", o.Writers, MaxWriters)
	}
	if !(o.Speed > 0 && o.Speed <= maxSpeed) { // NaN too
		return nil, fmt.Errorf("--speed %g: use a number above 0 and at most %d (2 is twice as fast)", o.Speed, maxSpeed)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	r := &run{ctx: ctx, o: o, name: name, rec: newRecorder(), res: &Result{}}
	r.res.Timeline = &timeline.Timeline{Title: "sharedconfig demo " + name}
	err := fn(ctx, r)
	r.close()
	r.res.Timeline.Lanes, r.res.Timeline.Tries = r.lanes, r.rec.tries()
	if r.drawn != nil {
		r.res.Timeline.Tries = r.drawn
	}
	return r.res, errors.Join(err, r.removeConfigs())
}

// run is one scenario's run: its writers, what they did, what it says.
type run struct {
	ctx     context.Context // the run's: when it ends, so do the operations
	o       Options
	name    string
	rec     *recorder
	res     *Result
	lanes   []string
	writers []*writer
	step    int
	drawn   []timeline.Try // the tries to draw, when not all of them
}

// say narrates one line (or a few, by newlines in format).
// Every string argument is shown as the shell shows text from others: as
// is when printable, else quoted, so that nothing another process writes
// into the demo's config (a value, a key, a writer's name) drives the
// terminal.
func (r *run) say(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = shown(s)
		}
	}
	fmt.Fprintf(r.o.Out, format+"\n", args...)
}

// shown is s as is if every character of it is printable, else quoted.
func shown(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// nextStep begins a step: it waits for the reader if asked to, pauses as
// the speed says, and names the step.
func (r *run) nextStep(title string) error {
	r.step++
	if r.step > 1 {
		if r.o.Step != nil {
			if err := r.o.Step(); err != nil {
				return err
			}
		} else {
			r.pause(400 * time.Millisecond)
		}
	}
	r.say("")
	r.say("Step %d: %s", r.step, title)
	return nil
}

func (r *run) pause(d time.Duration) {
	time.Sleep(time.Duration(float64(d) / r.o.Speed))
}

// newConfig names a fresh config for this run.
func (r *run) newConfig(what string) string {
	name := what + "-" + strings.ToLower(nuid.Next()[:10])
	r.res.Configs = append(r.res.Configs, name)
	return name
}

// open starts a writer named name on config, as a new lane.
func (r *run) open(ctx context.Context, config, name string, o openOptions) (*writer, error) {
	return r.openLane(ctx, config, name, len(r.lanes), o)
}

// openLane starts a writer named name on config, drawn in lane (a new
// one, or one an earlier writer of that name used).
func (r *run) openLane(ctx context.Context, config, name string, lane int, o openOptions) (*writer, error) {
	if lane == len(r.lanes) {
		r.lanes = append(r.lanes, name)
		r.res.Timeline.Lanes = r.lanes
	}
	w, err := startWriter(ctx, r, config, name, lane, o)
	if err != nil {
		return nil, err
	}
	r.writers = append(r.writers, w)
	return w, nil
}

// close stops every writer still running.
func (r *run) close() {
	for _, w := range slices.Backward(r.writers) {
		w.stop()
	}
}

// removeConfigs deletes the run's configs unless told to keep them.
func (r *run) removeConfigs() error {
	if r.o.Keep || len(r.res.Configs) == 0 {
		return nil
	}
	// Not the run's context: a run stopped by Ctrl-C still cleans up.
	ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
	defer cancel()
	nc, err := r.o.Dial(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	var errs []error
	for _, name := range r.res.Configs {
		// Already gone (destroyed under the run) is what removing is for.
		if err := jetstream.DeleteConfig(ctx, nc, r.o.Scope, name); err != nil && !errors.Is(err, jetstream.ErrNoConfig) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// tape reads config's log through w, as the timeline's tape.
func (r *run) tape(ctx context.Context, w *writer) ([]timeline.Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	changes, err := w.cfg.History(ctx, "", 100_000)
	if err != nil {
		return nil, err
	}
	return TapeOf(changes, r.res.Timeline.LaneOf), nil
}

// TapeOf turns a config's history into the timeline's tape; laneOf names
// the lane of a writer (-1: none).
func TapeOf(changes []sharedconfig.Change, laneOf func(string) int) []timeline.Entry {
	var tape []timeline.Entry
	for _, ch := range changes {
		e := timeline.Entry{Revision: ch.Revision, Lane: laneOf(ch.Writer), Writer: ch.Writer, Snapshot: ch.Snapshot, Time: ch.Time}
		switch {
		case ch.Snapshot:
			e.Text = fmt.Sprintf("%d properties", ch.Properties)
		case ch.Foreign != "":
			e.Text = "stepped over: " + ch.Foreign
		case ch.Damage != "":
			e.Text = "damaged: " + ch.Damage
		default:
			ops := make([]string, len(ch.Ops))
			for i, op := range ch.Ops {
				ops[i] = op.String()
				if op.HandedBy != "" && !slices.Contains(e.Carries, op.HandedBy) {
					e.Carries = append(e.Carries, op.HandedBy)
				}
			}
			e.Text = strings.Join(ops, "; ")
		}
		tape = append(tape, e)
	}
	return tape
}

// namesOfWriters are the writers' names, lane by lane.
var namesOfWriters = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
