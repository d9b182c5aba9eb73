package sharedconfig_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// COMPACT of a config purged under the process writes the empty state it
// now holds, as the first write after a purge does, rather than fail for
// want of one.
func TestCompactAfterPurge(t *testing.T) {
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	put(t, c, "k", "v")
	if err := c.Log().(*jetstream.Log).Stream().Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Refresh(ctx); !errors.Is(err, statesync.ErrEmptied) {
		t.Fatalf("Refresh after a purge: %v, want ErrEmptied", err)
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatalf("Compact after a purge: %v", err)
	}
	if st := c.State(); st.Len() != 0 || st.Revision() <= 2 {
		t.Fatalf("after Compact: %d properties at %d; want none, past the purge at 2", st.Len(), st.Revision())
	}
}
