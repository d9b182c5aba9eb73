package bench

import (
	"context"
	"strconv"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// The entries the bench appends itself read as the puts they stand for, and
// the config writeSnapshot fills opens, in a fresh process, with every key at
// the revision a compaction gives it.
func TestBenchEntriesReadAsPuts(t *testing.T) {
	ctx := context.Background()
	nc := jstest.Connect(t, jstest.Server(t))
	c, err := openOn(ctx, nc, "entries", sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := appendEntries(ctx, c.Log(), 5, key, func(int) {}); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatalf("reading the bench's entries: %v", err)
	}
	for i := range 5 {
		if v, _ := c.Get(key(i)); v != "value-"+strconv.Itoa(i) {
			t.Fatalf("%s = %q after the bench's put, want value-%d", key(i), v, i)
		}
	}
	const n = 3000 // more than one entry holds: the import is a snapshot
	if err := writeSnapshot(ctx, c, n); err != nil {
		t.Fatal(err)
	}
	fresh, err := openOn(ctx, nc, "entries", sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	state := fresh.State()
	if p, _ := state.Lookup(key(n - 1)); state.Len() != n || p.Value != "value-"+strconv.Itoa(n-1) || p.Revision == 0 || p.Revision == state.Revision() {
		t.Fatalf("after writeSnapshot: %d keys, %s = %+v at revision %d; want %d keys, set before the snapshot", state.Len(), key(n-1), p, state.Revision(), n)
	}
}
