package demo

import (
	"context"
	"fmt"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// openWriters starts n writers on config, named alice, bob, ...
func (r *run) openWriters(ctx context.Context, config string, n int, o openOptions) ([]*writer, error) {
	ws := make([]*writer, n)
	for i := range ws {
		w, err := r.open(ctx, config, namesOfWriters[i], o)
		if err != nil {
			return nil, err
		}
		ws[i] = w
	}
	return ws, nil
}

// sayTries narrates the tries recorded since the first from, of lane.
func (r *run) sayTries(from, lane int) {
	tries := r.rec.tries()
	for _, tr := range tries[from:] {
		if tr.Lane == lane {
			r.say("  %s: %s", r.lanes[lane], tr.Describe())
		}
	}
}

// doTraced runs fn on w, then narrates its tries and the answer it gave.
func (r *run) doTraced(w *writer, what string, fn answerFunc) error {
	from := len(r.rec.tries())
	var answer string
	err := w.do(what, func(c *sharedconfig.Config) error {
		ctx, cancel := ctxFor(r)
		defer cancel()
		var err error
		answer, err = fn(ctx, c)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", w.name, what, err)
	}
	r.say("  %s> %s", w.name, what)
	r.sayTries(from, w.lane)
	r.say("  %s", answer)
	return nil
}

// answerFunc runs an operation and gives the answer the shell would.
type answerFunc func(ctx context.Context, c *sharedconfig.Config) (string, error)

func ctxFor(r *run) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx, r.o.Timeout)
}

func race(ctx context.Context, r *run) error {
	config := r.newConfig("race")
	r.say("Scenario race: %d writers change the key 'color' of %s/%s from the same revision.", r.o.Writers, r.o.Scope, config)
	r.say("Each writer is a goroutine with its own connection and its own copy; every change is a conditional append.")
	ws, err := r.openWriters(ctx, config, r.o.Writers, openOptions{})
	if err != nil {
		return err
	}
	alice, bob := ws[0], ws[1]
	if err := r.nextStep("alice sets the starting value"); err != nil {
		return err
	}
	if err := r.doTraced(alice, "PUT color , white", putAnswer("color", "white")); err != nil {
		return err
	}
	if err := r.nextStep("every writer reads the same revision"); err != nil {
		return err
	}
	for _, w := range ws {
		if err := w.do("REFRESH", refresh(r)); err != nil {
			return err
		}
		v, _ := w.cfg.Get("color")
		r.say("  %s's copy is at revision %d: color = '%s'", w.name, w.cfg.State().Revision(), v)
	}
	if err := r.nextStep("alice replaces white with red; her copy is current, so her append lands"); err != nil {
		return err
	}
	if err := r.doTraced(alice, "REPLACE color , red , white", replaceAnswer("color", "red", "white")); err != nil {
		return err
	}
	if err := r.nextStep("bob replaces white with blue: his copy still says white, so he tries on it"); err != nil {
		return err
	}
	if err := r.doTraced(bob, "REPLACE color , blue , white", replaceAnswer("color", "blue", "white")); err != nil {
		return err
	}
	r.say("  The stream refused bob's append: alice's had landed first. bob caught up, saw red, and decided again: nothing to write.")
	if err := r.raceOthers(ws[2:]); err != nil {
		return err
	}
	return r.agree(ctx, ws, "color")
}

// raceOthers has the writers after bob PUT on their copies, which still
// say white: each is refused, catches up and puts again.
func (r *run) raceOthers(ws []*writer) error {
	colours := []string{"green", "yellow", "purple", "orange", "pink", "grey"}
	for i, w := range ws {
		if err := r.nextStep(fmt.Sprintf("%s puts %s on a copy that still says white", w.name, colours[i])); err != nil {
			return err
		}
		what := fmt.Sprintf("PUT color , %s", colours[i])
		if err := r.doTraced(w, what, putAnswer("color", colours[i])); err != nil {
			return err
		}
		r.say("  A PUT decides nothing from what it read, so after the catch-up it simply tries again, and says the value it really replaced.")
	}
	return nil
}

// agree has every writer catch up and show key, then draws the stream.
func (r *run) agree(ctx context.Context, ws []*writer, key string) error {
	if err := r.nextStep("every writer catches up: all copies agree"); err != nil {
		return err
	}
	for _, w := range ws {
		if err := w.do("REFRESH", refresh(r)); err != nil {
			return err
		}
		v, _ := w.cfg.Get(key)
		r.say("  %s: %s = '%s' at revision %d", w.name, key, v, w.cfg.State().Revision())
	}
	tape, err := r.tape(ctx, ws[0])
	r.res.Timeline.Tape = tape
	return err
}

func refresh(r *run) func(c *sharedconfig.Config) error {
	return func(c *sharedconfig.Config) error {
		ctx, cancel := ctxFor(r)
		defer cancel()
		return c.Refresh(ctx)
	}
}

// putAnswer is PUT key, value with the original's answer.
func putAnswer(key, value string) answerFunc {
	return func(ctx context.Context, c *sharedconfig.Config) (string, error) {
		r, err := c.Put(ctx, key, value)
		old := r.Previous.Value
		if !r.Existed {
			return fmt.Sprintf("**** Property '%s' added with value '%s'", key, value), err
		}
		return fmt.Sprintf("**** Property '%s' updated from: '%s' to: '%s'", key, old, value), err
	}
}

// replaceAnswer is REPLACE key, value, current with the original's answer.
func replaceAnswer(key, value, current string) answerFunc {
	return func(ctx context.Context, c *sharedconfig.Config) (string, error) {
		r, err := c.Replace(ctx, key, value, sharedconfig.IfValue(current))
		if !r.Written {
			return fmt.Sprintf("!!!! Property '%s' was NOT replaced -- current value did not match given value '%s'", key, current), err
		}
		return fmt.Sprintf("**** Property '%s' had value '%s', now replaced with new value '%s'", key, current, value), err
	}
}
