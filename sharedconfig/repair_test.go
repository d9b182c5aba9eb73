package sharedconfig_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// publishRaw stores a message on the config's subject as another program
// would, and returns its revision.
func publishRaw(t *testing.T, e *env, body string, headers ...string) uint64 {
	t.Helper()
	js, err := natsjs.New(jstest.Connect(t, e.srv))
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(jetstream.Subject("test", e.name))
	msg.Data = []byte(body)
	for i := 0; i+1 < len(headers); i += 2 {
		msg.Header.Set(headers[i], headers[i+1])
	}
	ack, err := js.PublishMsg(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// A message without sharedconfig's headers holds no change: readers step
// over it, watchers hear why, and writes go on.
func TestForeignEntryIsSteppedOver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var changes []sharedconfig.Change
	var mu sync.Mutex
	c := e.open(sharedconfig.Options{})
	stop, err := c.Watch("", func(ch sharedconfig.Change) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, ch)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	put(t, c, "k", "v")
	rev := publishRaw(t, e, "hello")
	if err := c.Refresh(ctx); err != nil {
		t.Fatalf("Refresh over a foreign entry: %v", err)
	}
	if c.State().Revision() != rev {
		t.Fatalf("revision %d after the foreign entry %d", c.State().Revision(), rev)
	}
	mu.Lock()
	last := changes[len(changes)-1]
	mu.Unlock()
	if last.Revision != rev || !strings.Contains(last.Foreign, "not a sharedconfig entry") {
		t.Fatalf("the watcher heard %+v; want the foreign entry %d and why it was skipped", last, rev)
	}
	put(t, c, "k", "w")
	// A new reader loads past it too, and LOG shows it.
	d := e.open(sharedconfig.Options{})
	if v, _ := d.Get("k"); v != "w" {
		t.Fatalf("a new reader: k = %q, want w", v)
	}
	h := must[[]sharedconfig.Change](t)(d.History(ctx, "", 2))
	if h[0].Revision != rev || h[0].Foreign == "" {
		t.Fatalf("History: %+v; want the foreign entry first", h)
	}
}

// A damaged entry: Open gives the last good state with a DamagedError,
// writes fail, and Repair writes that state past the damage, once.
func TestDamagedEntryOpensReadOnlyAndRepairs(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	put(t, c, "k", "good")
	bad := publishRaw(t, e, "garbage", jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update")
	later := publishRaw(t, e, `{"ops":[{"op":"put","key":"k","value":"later"}]}`, jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update", jetstream.HeaderWriter, "other")

	l, err := jetstream.OpenLog(ctx, jstest.Connect(t, e.srv), "test", e.name, jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sharedconfig.Open(ctx, l, sharedconfig.Options{})
	var damaged *sharedconfig.DamagedError
	if !errors.As(err, &damaged) || d == nil || damaged.Entry.Revision != bad || damaged.GoodRevision != bad-1 {
		t.Fatalf("Open over damage: %v, %v; want the config and a DamagedError at entry %d", d, err, bad)
	}
	if v, _ := d.Get("k"); v != "good" {
		t.Fatalf("read-only state: k = %q, want good", v)
	}
	if _, err := d.Put(ctx, "k", "new"); err == nil {
		t.Fatal("a write past the damage landed")
	}
	h := must[[]sharedconfig.Change](t)(d.History(ctx, "", 3))
	if len(h) != 3 || h[1].Revision != bad || h[1].Damage == "" || h[2].Revision != later || h[2].Damage != "" {
		t.Fatalf("History over damage: %+v; want the damaged entry marked and the one after it read", h)
	}
	plan := must[sharedconfig.RepairReport](t)(d.Repair(ctx, sharedconfig.DryRun()))
	if !plan.Damaged() || len(plan.Discarded) != 2 || plan.Discarded[0].Damage == "" ||
		plan.Discarded[1].Revision != later || plan.Discarded[1].Writer != "other" || plan.Discarded[1].Ops[0].Value != "later" || plan.Snapshot != 0 {
		t.Fatalf("plan: %+v", plan)
	}
	if last := must[uint64](t)(logtest.LastRevision(d.Log(), ctx)); last != later {
		t.Fatalf("a dry run wrote: the log ends at %d, want %d", last, later)
	}
	// A write after the dry run: the repair it agreed to changes nothing.
	earlier := must[sharedconfig.RepairReport](t)(d.Repair(ctx, sharedconfig.DryRun()))
	publishRaw(t, e, `{"ops":[{"op":"put","key":"k","value":"meanwhile"}]}`, jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update")
	if _, err := d.Repair(ctx, sharedconfig.IfUnchanged(earlier)); !errors.Is(err, statesync.ErrConflict) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("a repair after the log moved: %v", err)
	}
	plan = must[sharedconfig.RepairReport](t)(d.Repair(ctx, sharedconfig.DryRun()))
	later = plan.LastRevision
	repaired := must[sharedconfig.RepairReport](t)(d.Repair(ctx, sharedconfig.IfUnchanged(plan)))
	if rev := repaired.Snapshot; rev != later+1 || d.State().Revision() != rev {
		t.Fatalf("repaired at %d, local copy at %d; want %d", rev, d.State().Revision(), later+1)
	}
	put(t, d, "k", "after")
	if err := c.Refresh(ctx); err != nil {
		t.Fatalf("the first process, after the repair: %v", err)
	}
	if v, _ := c.Get("k"); v != "after" {
		t.Fatalf("k = %q after the repair, want after", v)
	}
	if _, err := d.Repair(ctx); !errors.Is(err, sharedconfig.ErrNothingToRepair) {
		t.Fatalf("a second repair: %v", err)
	}
}

// A repair agreed to on a config that is then destroyed and created again,
// up to the same revision and damaged at the same entry, writes nothing:
// the old config's good state never lands in the new one.
func TestRepairDoesNotLandOnAConfigCreatedAgain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	damage := func() uint64 {
		c := e.open(sharedconfig.Options{})
		put(t, c, "k", "old")
		return publishRaw(t, e, "garbage", jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update")
	}
	bad := damage()
	l, err := jetstream.OpenLog(ctx, jstest.Connect(t, e.srv), "test", e.name, jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sharedconfig.Open(ctx, l, sharedconfig.Options{})
	if d == nil {
		t.Fatalf("Open over damage: %v", err)
	}
	plan := must[sharedconfig.RepairReport](t)(d.Repair(ctx, sharedconfig.DryRun()))
	if !plan.Damaged() || plan.LastRevision != bad {
		t.Fatalf("plan: %+v", plan)
	}

	if err := jetstream.DeleteConfig(ctx, jstest.Connect(t, e.srv), "test", e.name); err != nil {
		t.Fatal(err)
	}
	if again := damage(); again != bad {
		t.Fatalf("created again up to revision %d, want %d as before", again, bad)
	}
	if _, err := d.Repair(ctx, sharedconfig.IfUnchanged(plan)); !errors.Is(err, statesync.ErrReplaced) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("the repair agreed to before the config was created again: %v; want ErrReplaced, nothing written", err)
	}
	if last := must[uint64](t)(logtest.LastRevision(l, ctx)); last != bad {
		t.Fatalf("the config created again ends at %d, want %d: the repair wrote into it", last, bad)
	}
}

// An entry the log itself cannot read (a kind it does not know) is listed
// as damage too, and the entries after it are read.
func TestUnreadableEntryIsListed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	put(t, c, "k", "good")
	bad := publishRaw(t, e, "{}", jetstream.HeaderFormat, "1", jetstream.HeaderKind, "mystery")
	later := publishRaw(t, e, `{"ops":[{"op":"remove","key":"k"}]}`, jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update")
	h := must[[]sharedconfig.Change](t)(c.History(ctx, "", 2))
	if len(h) != 2 || h[0].Revision != bad || !strings.Contains(h[0].Damage, `unknown entry kind "mystery"`) || h[1].Revision != later || h[1].Ops[0].Kind != "remove" {
		t.Fatalf("History: %+v", h)
	}
	if err := c.Refresh(ctx); err == nil {
		t.Fatal("Refresh read past an entry it cannot read")
	}
	repaired := must[sharedconfig.RepairReport](t)(c.Repair(ctx))
	if !repaired.Damaged() || len(repaired.Discarded) != 2 || repaired.Snapshot == 0 {
		t.Fatalf("repaired: %+v", repaired)
	}
	if v, _ := c.Get("k"); v != "good" {
		t.Fatalf("after the repair: k = %q, want good", v)
	}
}
