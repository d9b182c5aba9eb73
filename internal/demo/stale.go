package demo

import (
	"context"
	"fmt"
	"slices"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// stale is the original walkthrough's two terminals, as two writers.
func stale(ctx context.Context, r *run) error {
	config := r.newConfig("stale")
	r.say("Scenario stale: the two-process walkthrough of Pravega's SharedConfig, on %s/%s.", r.o.Scope, config)
	r.say("Reads use each process's local copy and do no I/O; only a write, or REFRESH, reads the stream.")
	p1, err := r.open(ctx, config, "process-1", openOptions{})
	if err != nil {
		return err
	}
	p2, err := r.open(ctx, config, "process-2", openOptions{})
	if err != nil {
		return err
	}
	steps := []struct {
		title string
		run   func() error
	}{
		{"both processes GET_ALL: the config is empty", func() error { r.getAll(p1, config); r.getAll(p2, config); return nil }},
		{"process-1 PUT p1 , v1", func() error { return r.doTraced(p1, "PUT p1 , v1", putAnswer("p1", "v1")) }},
		{"both GET p1: process-2 has not refreshed, so its copy does not have p1", func() error { r.get(p1, "p1"); r.get(p2, "p1"); return nil }},
		{"process-2 REFRESH", func() error { return r.refreshSaid(p2) }},
		{"process-2 GET p1", func() error { r.get(p2, "p1"); return nil }},
		{"process-2 REPLACE p1 , newVal , v1: its copy is current, the append lands", func() error {
			return r.doTraced(p2, "REPLACE p1 , newVal , v1", replaceAnswer("p1", "newVal", "v1"))
		}},
		{"process-2 GET p1", func() error { r.get(p2, "p1"); return nil }},
		{"process-1 REPLACE p1 , anotherVal , v1: its stale copy says v1, so it tries", func() error {
			if err := r.doTraced(p1, "REPLACE p1 , anotherVal , v1", replaceAnswer("p1", "anotherVal", "v1")); err != nil {
				return err
			}
			r.say("  The append was conditional on revision 2, where process-1's copy stood; the stream was at 3, so it was refused.")
			r.say("  process-1 caught up, ran the check again on p1 = newVal, and refused the replace itself: nothing was written.")
			return nil
		}},
		{"process-1 GET p1: the refused replace refreshed its copy", func() error { r.get(p1, "p1"); return nil }},
	}
	for _, s := range steps {
		if err := r.nextStep(s.title); err != nil {
			return err
		}
		if err := s.run(); err != nil {
			return err
		}
	}
	tape, err := r.tape(ctx, p1)
	r.res.Timeline.Tape = tape
	return err
}

// get answers GET key from w's copy, as the shell does.
func (r *run) get(w *writer, key string) {
	if v, ok := w.cfg.Get(key); ok {
		r.say("  %s> GET %s\n  **** The value of property '%s' is '%s' (copy at revision %d)", w.name, key, key, v, w.cfg.State().Revision())
		return
	}
	r.say("  %s> GET %s\n  !!!! Property '%s' is undefined (copy at revision %d)", w.name, key, key, w.cfg.State().Revision())
}

// getAll answers GET_ALL from w's copy.
func (r *run) getAll(w *writer, config string) {
	r.say("  %s> GET_ALL\n  **** Properties for SharedConfig: '%s' :", w.name, config)
	var lines []string
	for k, p := range w.cfg.State().All() {
		lines = append(lines, fmt.Sprintf("  ****     '%s' -> '%s'", shown(k), shown(p.Value)))
	}
	slices.Sort(lines)
	for _, l := range lines {
		r.say("%s", l)
	}
}

func (r *run) refreshSaid(w *writer) error {
	if err := w.do("REFRESH", refresh(r)); err != nil {
		return err
	}
	r.say("  %s> REFRESH\n  **** Properties refreshed (copy at revision %d)", w.name, w.cfg.State().Revision())
	return nil
}

// compact: a compaction racing a writer, both ways.
func compact(ctx context.Context, r *run) error {
	config := r.newConfig("compact")
	r.say("Scenario compact: a compaction races a writer on %s/%s.", r.o.Scope, config)
	r.say("A compaction is a conditional append too: a snapshot of the compactor's copy, which replaces every entry before it.")
	alice, err := r.open(ctx, config, "alice", openOptions{})
	if err != nil {
		return err
	}
	if err := r.nextStep("alice writes three keys"); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}} {
		if err := r.doTraced(alice, "PUT "+kv[0]+" , "+kv[1], putAnswer(kv[0], kv[1])); err != nil {
			return err
		}
	}
	compactor, err := r.open(ctx, config, "compactor", openOptions{watchCompactions: true})
	if err != nil {
		return err
	}
	r.say("  compactor starts; its copy is at revision %d", compactor.cfg.State().Revision())
	return r.compactRace(ctx, alice, compactor)
}

func (r *run) compactRace(ctx context.Context, alice, compactor *writer) error {
	if err := r.nextStep("alice writes once more: the compactor's copy is now behind"); err != nil {
		return err
	}
	if err := r.doTraced(alice, "PUT d , 4", putAnswer("d", "4")); err != nil {
		return err
	}
	before, err := r.tape(ctx, alice)
	if err != nil {
		return err
	}
	if err := r.nextStep("the compactor compacts from its copy"); err != nil {
		return err
	}
	if err := r.doTraced(compactor, "COMPACT", compactAnswer); err != nil {
		return err
	}
	r.say("  Its first snapshot would have lost alice's d: the stream refused it. It caught up and snapshotted again.")
	if err := r.nextStep("alice writes on her copy, which has not seen the snapshot"); err != nil {
		return err
	}
	if err := r.doTraced(alice, "PUT e , 5", putAnswer("e", "5")); err != nil {
		return err
	}
	r.say("  Her catch-up read the snapshot, which stands for every entry before it, and her second try landed.")
	if err := r.agree(ctx, []*writer{alice, compactor}, "d"); err != nil {
		return err
	}
	r.res.Timeline.Tape = mergeTapes(before, r.res.Timeline.Tape)
	return nil
}

func compactAnswer(ctx context.Context, c *sharedconfig.Config) (string, error) {
	if err := c.Compact(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("**** Compacted: a snapshot of %d properties replaces the history before it", c.State().Len()), nil
}

// mergeTapes is the tape read before a compaction followed by the one read
// after; the entries the snapshot replaced are marked as dropped.
func mergeTapes(before, after []timeline.Entry) []timeline.Entry {
	if len(after) == 0 {
		return before
	}
	first := after[0].Revision
	var out []timeline.Entry
	for _, e := range before {
		if e.Revision < first {
			e.Text += fmt.Sprintf(" (dropped: the snapshot at r%d replaces it)", first)
			e.Dropped = true
			out = append(out, e)
		}
	}
	return append(out, after...)
}
