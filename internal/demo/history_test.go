package demo_test

import (
	"context"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/demo"
	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
)

// A timeline drawn from a log shows the leases the log shows ending, up to
// their end, as well as those the config holds: each bar from the entry
// that last set its deadline (a registration, a refresh, or a snapshot
// that holds it) to that deadline.
func TestTimelineFromHistoryDrawsEndedLeases(t *testing.T) {
	t.Parallel()
	changes, state, was := historyOfEndedLeases(t)
	tl := demo.FromHistory("tl/cfg", changes, state)
	byName := map[string]timeline.Lease{}
	for _, l := range tl.Leases {
		byName[l.Name] = l
	}
	if len(tl.Leases) != 3 {
		t.Fatalf("leases drawn: %+v; want refreshed, compacted (both revoked) and held", tl.Leases)
	}
	for name, was := range was {
		l, revoke := byName[name], revokeOf(t, changes, name)
		if !l.From.Equal(was.Deadline.Add(-was.TTL)) || !l.Deadline.Equal(was.Deadline) {
			t.Errorf("%s: from %s to %s; want to its deadline %s, from %s before", name, l.From, l.Deadline, was.Deadline, was.TTL)
		}
		if l.Ended.IsZero() || !l.Ended.Equal(revoke.Time) || l.EndedAt != revoke.Revision || l.Expired || tl.Lanes[l.Lane] != was.Holder || tl.Lanes[l.EndedBy] != "w" {
			t.Errorf("%s: %+v; want held by %s, revoked at r%d by w (lanes %q)", name, l, was.Holder, revoke.Revision, tl.Lanes)
		}
	}
	if l := byName["held"]; !l.Ended.IsZero() {
		t.Errorf("held: %+v; want it drawn as held", l)
	}
}

// historyOfEndedLeases writes a config's history with one lease known from
// the snapshot a compaction wrote and one from its registration and refresh
// after it, both revoked, and a third still held. It returns the history,
// the state, and the two revoked leases as they were before their end.
func historyOfEndedLeases(t *testing.T) ([]sharedconfig.Change, sharedconfig.State, map[string]lease.Lease) {
	t.Helper()
	srv := jstest.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "tl", "cfg", jetstream.LogOptions{Writer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sharedconfig.Open(ctx, log, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	leases := cfg.Leases()
	must(leases.Register(ctx, "compacted", 2*time.Hour))
	must(nil, cfg.Compact(ctx))
	compacted, _ := cfg.State().Lease("compacted")
	must(leases.Register(ctx, "refreshed", time.Hour))
	must(leases.Refresh(ctx, "refreshed"))
	refreshed, _ := cfg.State().Lease("refreshed")
	must(leases.Revoke(ctx, "refreshed"))
	must(leases.Revoke(ctx, "compacted"))
	must(leases.Register(ctx, "held", time.Hour))
	changes, err := cfg.History(ctx, "", 100)
	must(nil, err)
	return changes, cfg.State(), map[string]lease.Lease{"refreshed": refreshed, "compacted": compacted}
}

// revokeOf is the change in changes that revoked lease.
func revokeOf(t *testing.T, changes []sharedconfig.Change, lease string) sharedconfig.Change {
	t.Helper()
	for _, ch := range changes {
		for _, op := range ch.Ops {
			if op.Kind == "revoke_lease" && op.Lease == lease {
				return ch
			}
		}
	}
	t.Fatalf("no revocation of %s in the history", lease)
	return sharedconfig.Change{}
}

// Describe counts in the singular where there is one of a thing: a config
// with one entry is "1 lane, 1 try, 1 revision", not "1 lanes".
func TestDescribeCountsOneInTheSingular(t *testing.T) {
	one := &timeline.Timeline{Lanes: []string{"bob"}, Tries: make([]timeline.Try, 1), Tape: make([]timeline.Entry, 1)}
	if got, want := demo.Describe(one), "1 lane, 1 try, 1 revision, 0 leases"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	two := &timeline.Timeline{Lanes: []string{"a", "b"}, Tries: make([]timeline.Try, 3), Tape: make([]timeline.Entry, 3), Leases: make([]timeline.Lease, 2)}
	if got, want := demo.Describe(two), "2 lanes, 3 tries, 3 revisions, 2 leases"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
