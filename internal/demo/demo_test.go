package demo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/demo"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// runScenario runs a scenario against a real server, fast, and returns
// what it did and said.
func runScenario(t *testing.T, name string, writers int) (*demo.Result, string) {
	t.Helper()
	return runScenarioAt(t, name, writers, 100)
}

// runScenarioAt runs a scenario as runScenario does, at speed.
func runScenarioAt(t *testing.T, name string, writers int, speed float64) (*demo.Result, string) {
	t.Helper()
	srv := jstest.Server(t)
	var out bytes.Buffer
	res, err := demo.Run(context.Background(), name, demo.Options{
		Dial: func(context.Context) (*nats.Conn, error) {
			return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
		},
		Out: &out, Writers: writers, Speed: speed, Scope: "demo", Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out.String())
	}
	return res, out.String()
}

// refusedThenRetried reports whether lane has a write whose try was
// refused and whose next try ended as want.
func refusedThenRetried(tries []timeline.Try, lane int, want timeline.Outcome) bool {
	for i, tr := range tries {
		if tr.Lane != lane || tr.Outcome != timeline.Refused {
			continue
		}
		for _, next := range tries[i+1:] {
			if next.Write == tr.Write {
				if next.Outcome == want && next.N == tr.N+1 && next.Base == tr.CaughtUp {
					return true
				}
				break
			}
		}
	}
	return false
}

func TestRaceShowsTheConflictAndTheSecondDecision(t *testing.T) {
	t.Parallel()
	res, out := runScenario(t, "race", 3)
	tl := res.Timeline
	if len(tl.Lanes) != 3 {
		t.Fatalf("lanes %v, want 3", tl.Lanes)
	}
	bob, carol := tl.LaneOf("bob"), tl.LaneOf("carol")
	if !refusedThenRetried(tl.Tries, bob, timeline.Confirmed) {
		t.Errorf("bob's REPLACE was not refused and then decided again with nothing to write: %+v", tl.Tries)
	}
	if !refusedThenRetried(tl.Tries, carol, timeline.Committed) {
		t.Errorf("carol's PUT was not refused and then committed on the caught-up copy: %+v", tl.Tries)
	}
	for _, want := range []string{
		"bob: try 1 on r2: refused, the stream was at r3; caught up to r3",
		"bob: try 2 on r3: nothing to write",
		"!!!! Property 'color' was NOT replaced -- current value did not match given value 'white'",
		"**** Property 'color' updated from: 'red' to: 'green'",
		"carol: color = 'green' at revision 4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the narration lacks %q:\n%s", want, out)
		}
	}
	if len(tl.Tape) != 4 || !tl.Tape[0].Snapshot || tl.Tape[3].Revision != 4 || tl.Tape[3].Lane != carol {
		t.Errorf("tape %+v, want the initial snapshot and three changes", tl.Tape)
	}
}

func TestStaleCopyIsRefusedThenDecidesAgain(t *testing.T) {
	t.Parallel()
	res, out := runScenario(t, "stale", 2)
	tl := res.Timeline
	p1 := tl.LaneOf("process-1")
	if !refusedThenRetried(tl.Tries, p1, timeline.Confirmed) {
		t.Errorf("process-1's REPLACE on its stale copy was not refused and decided again: %+v", tl.Tries)
	}
	for _, want := range []string{
		"process-2> GET p1\n  !!!! Property 'p1' is undefined (copy at revision 1)",
		"process-1: try 1 on r2: refused, the stream was at r3; caught up to r3",
		"!!!! Property 'p1' was NOT replaced -- current value did not match given value 'v1'",
		"process-1> GET p1\n  **** The value of property 'p1' is 'newVal' (copy at revision 3)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the narration lacks %q:\n%s", want, out)
		}
	}
}

func TestCompactionRacesAWriter(t *testing.T) {
	t.Parallel()
	res, out := runScenario(t, "compact", 2)
	tl := res.Timeline
	compactor, alice := tl.LaneOf("compactor"), tl.LaneOf("alice")
	if !refusedThenRetried(tl.Tries, compactor, timeline.Snapshot) {
		t.Errorf("the compaction was not refused and then landed on the caught-up copy: %+v", tl.Tries)
	}
	if !refusedThenRetried(tl.Tries, alice, timeline.Committed) {
		t.Errorf("alice's write after the snapshot was not refused and retried: %+v", tl.Tries)
	}
	var snapshots, dropped int
	for _, e := range tl.Tape {
		if e.Snapshot && e.Revision > 1 {
			snapshots++
		}
		if e.Dropped && strings.Contains(e.Text, "dropped") {
			dropped++
		}
	}
	if snapshots != 1 || dropped != 5 {
		t.Errorf("tape: %d snapshots after the first and %d dropped entries, want 1 and 5: %+v", snapshots, dropped, tl.Tape)
	}
	if !strings.Contains(out, "compactor: try 1 on r5: snapshot") && !strings.Contains(out, "compactor: try 2 on r5: snapshot landed at r6") {
		t.Errorf("the narration lacks the snapshot's second try:\n%s", out)
	}
}

func TestLeaseExpiresByTheServersTimestamp(t *testing.T) {
	t.Parallel()
	res, out := runScenario(t, "lease", 2)
	tl := res.Timeline
	var bob *timeline.Lease
	for i := range tl.Leases {
		if tl.Leases[i].Name == "/servers/bob" {
			bob = &tl.Leases[i]
		}
	}
	if bob == nil {
		t.Fatalf("no lease /servers/bob drawn: %+v\n%s", tl.Leases, out)
	}
	if !bob.Expired || bob.Ended.Before(bob.Deadline) {
		t.Errorf("bob's lease: expired %v at server time %s, deadline %s; want expired at or after the deadline", bob.Expired, bob.Ended, bob.Deadline)
	}
	if tl.Lanes[bob.EndedBy] != "alice" {
		t.Errorf("the expiry was written by %s, want alice (the only keeper left)", tl.Lanes[bob.EndedBy])
	}
	var entry *timeline.Entry
	for i := range tl.Tape {
		if tl.Tape[i].Revision == bob.EndedAt {
			entry = &tl.Tape[i]
		}
	}
	if entry == nil || !strings.Contains(entry.Text, "EXPIRE_LEASE /servers/bob") || !entry.Time.Equal(bob.Ended) {
		t.Errorf("the stream's entry at r%d is %+v, want bob's expiry at the time the watcher heard", bob.EndedAt, entry)
	}
	for _, want := range []string{
		"lease /servers/bob expired, removing /servers/2",
		"the server's timestamp on that entry is after the deadline",
		"lease /servers/alice revoked, removing /servers/1",
		"watcher: /servers/ now holds 0 keys",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the narration lacks %q:\n%s", want, out)
		}
	}
}

func TestTurnsCompareBothSides(t *testing.T) {
	t.Parallel()
	res, out := runScenario(t, "turns", 3)
	if len(res.Sides) != 2 || res.Sides[0].Turns || !res.Sides[1].Turns {
		t.Fatalf("sides %+v, want one without turns then one with", res.Sides)
	}
	for _, s := range res.Sides {
		if s.Commits == 0 || s.Tries < s.Commits || len(s.Writers) != 3 {
			t.Errorf("side %+v: want commits, at least one try each", s)
		}
	}
	if len(res.Timeline.Lanes) != 3 {
		t.Errorf("lanes %v, want one per writer, shared by both sides", res.Timeline.Lanes)
	}
	if !strings.Contains(out, "| tries per commit") {
		t.Errorf("no side-by-side table:\n%s", out)
	}
}

// A run stopped part way (here, the reader's input ended) still removes
// the config it made.
func TestStoppedRunLeavesNoConfig(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	dial := func(context.Context) (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}
	steps := 0
	var out bytes.Buffer
	_, err := demo.Run(context.Background(), "stale", demo.Options{
		Dial: dial, Out: &out, Writers: 2, Speed: 100, Scope: "demo", Timeout: 10 * time.Second,
		Step: func() error {
			if steps++; steps == 3 {
				return errors.New("the input ended")
			}
			return nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), "the input ended") {
		t.Fatalf("the run ended with %v, want the step's error", err)
	}
	nc := jstest.Connect(t, srv)
	configs, err := jetstream.ListConfigs(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) != 0 {
		t.Errorf("the stopped run left %+v on the server", configs)
	}
}

// A demo's config destroyed under it (by 'sharedconfig destroy', say) is not
// an error of its clean-up: there is nothing left to remove.
func TestDestroyedConfigIsNoCleanUpError(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	dial := func(context.Context) (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}
	destroyed := false
	var out bytes.Buffer
	_, err := demo.Run(context.Background(), "race", demo.Options{
		Dial: dial, Out: &out, Writers: 2, Speed: 100, Scope: "demo", Timeout: 10 * time.Second,
		Step: func() error {
			if destroyed {
				return nil
			}
			destroyed = true
			configs, err := jetstream.ListConfigs(context.Background(), nc)
			for _, c := range configs {
				err = errors.Join(err, jetstream.DeleteConfig(context.Background(), nc, c.Scope, c.Name))
			}
			return err
		},
	})
	if !destroyed {
		t.Fatal("the run never reached a second step")
	}
	if errors.Is(err, jetstream.ErrNoConfig) {
		t.Errorf("the run ended with %v: the clean-up took the config already gone for an error", err)
	}
}

// The lease scenario's config destroyed while its watcher waits for bob's
// lease to end stops the run at once, saying so, rather than when its
// patience (4 ttls and the timeout) runs out.
func TestLeaseRunStopsWhenItsConfigIsDestroyed(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	dial := func(context.Context) (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}
	steps := 0
	var out bytes.Buffer
	start := time.Now()
	_, err := demo.Run(context.Background(), "lease", demo.Options{
		Dial: dial, Out: &out, Writers: 2, Speed: 100, Scope: "demo", Timeout: 10 * time.Second,
		Step: func() error {
			if steps++; steps != 3 { // before step 4: the watcher waits
				return nil
			}
			configs, err := jetstream.ListConfigs(context.Background(), nc)
			for _, c := range configs {
				err = errors.Join(err, jetstream.DeleteConfig(context.Background(), nc, c.Scope, c.Name))
			}
			return err
		},
	})
	if err == nil || !strings.Contains(err.Error(), "was destroyed by another process") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("the run ended with %v after %s, want one line saying its config was destroyed\n%s", err, time.Since(start), out.String())
	}
	if !strings.Contains(err.Error(), "demo/lease-") {
		t.Errorf("%v does not name the config", err)
	}
}

// What another process writes into a demo's config (a value, a writer's
// name) is narrated escaped, as the shell shows it: nothing of it reaches
// the terminal as a control character.
func TestNarrationEscapesWhatOthersWrote(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	dial := func(context.Context) (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}
	hostile := "\x1b]0;owned\a\x1b[2J\u202e\x00"
	steps := 0
	var out bytes.Buffer
	_, err := demo.Run(context.Background(), "stale", demo.Options{
		Dial: dial, Out: &out, Writers: 2, Speed: 100, Scope: "demo", Timeout: 10 * time.Second,
		Step: func() error {
			if steps++; steps != 2 { // before both GET p1
				return nil
			}
			ctx := context.Background()
			configs, err := jetstream.ListConfigs(ctx, nc)
			if err != nil || len(configs) != 1 {
				return fmt.Errorf("configs %v, %v", configs, err)
			}
			log, err := jetstream.OpenLog(ctx, nc, configs[0].Scope, configs[0].Name, jetstream.LogOptions{Writer: "evil"})
			if err != nil {
				return err
			}
			cfg, err := sharedconfig.Open(ctx, log, sharedconfig.Options{})
			if err != nil {
				return err
			}
			defer cfg.Close()
			_, err = cfg.Put(ctx, "p1", hostile)
			return err
		},
	})
	if err != nil {
		t.Fatalf("the run ended with %v\n%s", err, out.String())
	}
	for _, r := range out.String() {
		if r != '\n' && !strconv.IsPrint(r) {
			t.Fatalf("the narration holds %U:\n%s", r, out.String())
		}
	}
	if want := strconv.Quote(hostile); !strings.Contains(out.String(), want) {
		t.Errorf("the narration does not show the value as %s:\n%s", want, out.String())
	}
}

// Writers in loops, combining, hand PUTs to one another: the log holds every
// PUT once, in fewer entries than PUTs, and the entries that carry them name
// the handers; without combining, each PUT is an entry of its own. The
// drawing shows the carried tries and the entries that carried them.
func TestCombineCarriesPUTsInOthersEntries(t *testing.T) {
	t.Parallel()
	// Runs of 0.5 s: long enough for the loops to hand PUTs, under -race too.
	res, out := runScenarioAt(t, "combine", 3, 2)
	on, off := res.Combining, res.CombiningOff
	if on == nil || off == nil || !on.On || off.On {
		t.Fatalf("runs %+v and %+v, want one with combining and one without", on, off)
	}
	for _, c := range []*demo.Combining{on, off} {
		if c.PUTs == 0 || c.Logged != c.PUTs || len(c.Writers) != 3 {
			t.Errorf("combining %v: %d PUTs made, %d in the log, %d writers; want the same, and 3", c.On, c.PUTs, c.Logged, len(c.Writers))
		}
	}
	if on.Carried == 0 || on.Carrying == 0 || on.Entries > on.PUTs-on.Carried+on.Carrying {
		t.Errorf("with combining: %d carried, %d entries carrying, %d entries for %d PUTs; want some carried, no entry for a carried PUT but its carrier's", on.Carried, on.Carrying, on.Entries, on.PUTs)
	}
	if off.Carried != 0 || off.Carrying != 0 || off.Entries != off.PUTs {
		t.Errorf("without combining: %d carried, %d entries for %d PUTs; want none carried, one entry each", off.Carried, off.Entries, off.PUTs)
	}
	tl := res.Timeline
	carried := 0
	for _, tr := range tl.Tries {
		if tr.Outcome != timeline.Carried {
			continue
		}
		carried++
		for _, e := range tl.Tape {
			if e.Revision == tr.Revision && (e.Lane == tr.Lane || !slices.Contains(e.Carries, tl.Lanes[tr.Lane])) {
				t.Errorf("%s's try carried at r%d: the entry there is %+v", tl.Lanes[tr.Lane], tr.Revision, e)
			}
		}
	}
	if carried == 0 || len(tl.Tape) == 0 {
		t.Errorf("the drawing has %d carried tries and %d entries: %+v", carried, len(tl.Tape), tl.Tries)
	}
	var text bytes.Buffer
	if err := timeline.WriteText(&text, tl, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), " ⇢ r") || !strings.Contains(text.String(), " carries ") {
		t.Errorf("the text drawing shows no carried try or no carrying entry:\n%s", text.String())
	}
	for _, want := range []string{
		"Step 2: what the log got\n  The log holds ",
		"Step 3: every writer caught up: each key holds its writer's last PUT\n  alice: alice = '",
		"| PUTs carried by another writer's entry |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the narration lacks %q:\n%s", want, out)
		}
	}
}
