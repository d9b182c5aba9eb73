package sharedconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// On a damaged config a refresh lands but cannot be read back, so the
// lease stays due: the keeper backs off rather than append a refresh every
// tick. (Issue 19.12: 51 entries in 10 s with a ttl of 3 s, against 9.)
func TestKeeperBacksOffOnADamagedConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	holder := e.open(sharedconfig.Options{Holder: "holder"})
	if _, err := holder.Leases().Register(ctx, "member", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	bad := publishRaw(t, e, "garbage", jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update")
	stop := holder.Leases().Keep(func(msg string) { t.Log("keeper:", msg) })
	const watch = 5 * time.Second
	time.Sleep(watch)
	stop()
	last, err := logtest.LastRevision(holder.Log(), ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Undamaged, a 3 s lease is refreshed once a second: 5 entries, 6 at
	// most with the first round. The back-off's first doublings add 3.
	if appended := last - bad; appended > 9 {
		t.Fatalf("the keeper appended %d refreshes in %s on a damaged config; a 3 s lease needs about %d", appended, watch, watch/time.Second)
	}
}

// A damaged config refuses writes until a repair, and a lease refresh is
// a write: once the holder's copy has met the damage, its refreshes are
// refused without being appended (the first, made before its copy knew,
// is the one that lands), so the stream does not fill with refreshes that
// a repair would discard. After the repair the lease is refreshed again.
func TestRefreshesStopAtADamagedEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	holder := e.open(sharedconfig.Options{Holder: "holder"})
	if _, err := holder.Leases().Register(ctx, "member", time.Minute); err != nil {
		t.Fatal(err)
	}
	bad := publishRaw(t, e, "garbage", jetstream.HeaderFormat, "1", jetstream.HeaderKind, "update")
	for i := range 5 {
		if _, err := holder.Leases().Refresh(ctx, "member"); err == nil {
			t.Fatalf("refresh %d on a damaged config: no error", i+1)
		}
	}
	last := must[uint64](t)(logtest.LastRevision(holder.Log(), ctx))
	if appended := last - bad; appended > 1 {
		t.Fatalf("%d refreshes appended past the damaged entry %d; want the first only", appended, bad)
	}
	if _, err := holder.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Leases().Refresh(ctx, "member"); err != nil {
		t.Fatalf("a refresh after the repair: %v", err)
	}
}
