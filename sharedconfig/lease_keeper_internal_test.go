package sharedconfig

import (
	"context"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The keeper refreshing a lease that this process revokes meanwhile (its
// round read the copy before the revocation) says nothing: the user ended
// it. It still warns of a lease that ended otherwise.
func TestKeeperQuietAboutALeaseThisProcessRevoked(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, statesync.NewMemLog("keeper"), Options{Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	k := keeper{c: c, warn: func(msg string) { warnings = append(warnings, msg) }, lastOK: map[string]time.Time{}, warned: map[string]bool{}}
	for _, name := range []string{"L", "M"} {
		if _, err := c.RegisterLease(ctx, name, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	st := c.State() // the round's copy
	if _, err := c.RevokeLease(ctx, "L"); err != nil {
		t.Fatal(err)
	}
	l, _ := st.Lease("L")
	k.refresh(ctx, "L", l)
	if len(warnings) != 0 {
		t.Fatalf("warned of a lease this process revoked: %q", warnings)
	}

	// M ends by another process of the same writer: news.
	twin, err := Open(ctx, c.sync.Log(), Options{Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := twin.RevokeLease(ctx, "M"); err != nil {
		t.Fatal(err)
	}
	m, _ := st.Lease("M")
	k.refresh(ctx, "M", m)
	if len(warnings) != 1 {
		t.Fatalf("warnings %q, want one of M's end", warnings)
	}
}
