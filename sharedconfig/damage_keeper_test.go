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
