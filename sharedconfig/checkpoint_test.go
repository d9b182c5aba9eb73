package sharedconfig_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// checkpointOf opens the config as a reader would and takes its checkpoint.
func (e *env) checkpoint() []byte {
	e.t.Helper()
	c := e.open(sharedconfig.Options{})
	defer c.Close()
	data, ok, err := c.Checkpoint()
	if err != nil || !ok {
		e.t.Fatalf("Checkpoint of a config just read: ok %v, %v", ok, err)
	}
	return data
}

// A config opened from a checkpoint reads only what was written after it (counted
// at the log: the progress hook hears only catch-ups of 1,024 entries or more)
// and holds what a config opened from the whole log holds.
func TestOpenFromACheckpointReadsOnlyLaterEntries(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.open(sharedconfig.Options{})
	defer w.Close()
	for i := range 300 {
		if _, err := w.Put(ctx, fmt.Sprint("k", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	cp := e.checkpoint()
	if _, err := w.Put(ctx, "k1", "changed"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Remove(ctx, "k2"); err != nil {
		t.Fatal(err)
	}

	l, err := jetstream.OpenLog(ctx, jstest.Connect(t, e.srv), "test", e.name, jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingLog{Log: l}
	resumed, err := sharedconfig.Open(ctx, counted, sharedconfig.Options{Resume: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	full := e.open(sharedconfig.Options{})
	defer full.Close()
	if got, want := contents(resumed), contents(full); !maps.Equal(got, want) {
		t.Fatalf("opened from the checkpoint: %d keys, k1=%q; opened from the log: %d keys, k1=%q", len(got), got["k1"], len(want), want["k1"])
	}
	if resumed.State().Revision() != full.State().Revision() {
		t.Fatalf("opened from the checkpoint at revision %d, from the log at %d", resumed.State().Revision(), full.State().Revision())
	}
	if n := counted.read.Load(); n > 2 {
		t.Fatalf("opening from the checkpoint read %d entries; want the 2 written after it", n)
	}
}

// countingLog counts the entries its reads deliver.
type countingLog struct {
	statesync.Log
	read atomic.Int64
}

func (l *countingLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	return l.Log.ReadAfter(ctx, after, upTo, func(e statesync.Entry) error {
		l.read.Add(1)
		return fn(e)
	})
}

// A checkpoint of a config destroyed and created again with another history
// (shorter, as long, longer) is never mixed in: the config opens with the
// new history alone.
func TestCheckpointOfADestroyedConfigIsNotMixedIn(t *testing.T) {
	for _, newPuts := range []int{1, 3, 6} {
		t.Run(fmt.Sprint(newPuts, " new puts"), func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			w := e.open(sharedconfig.Options{})
			for _, k := range []string{"secret", "a", "b"} {
				if _, err := w.Put(ctx, k, "old"); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			cp := e.checkpoint() // at revision 4
			nc := jstest.Connect(t, e.srv)
			if err := jetstream.DeleteConfig(ctx, nc, "test", e.name); err != nil {
				t.Fatal(err)
			}
			n := e.open(sharedconfig.Options{})
			want := map[string]string{}
			for i := range newPuts {
				k := fmt.Sprint("new", i)
				if _, err := n.Put(ctx, k, "new"); err != nil {
					t.Fatal(err)
				}
				want[k] = "new"
			}
			n.Close()
			resumed := e.open(sharedconfig.Options{Resume: cp})
			defer resumed.Close()
			if got := contents(resumed); !maps.Equal(got, want) {
				t.Fatalf("opened from the old checkpoint: %v, want the new config's %v", got, want)
			}
		})
	}
}

// Bytes that are not a checkpoint are ignored: the config opens from the
// log.
func TestOpenIgnoresWhatIsNotACheckpoint(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.open(sharedconfig.Options{})
	defer w.Close()
	if _, err := w.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	cp := e.checkpoint()
	for _, bad := range [][]byte{[]byte("garbage"), cp[:len(cp)/2], cp[:len(cp)-1]} {
		c := e.open(sharedconfig.Options{Resume: bad})
		if v, _ := c.Get("k"); v != "v" {
			t.Errorf("opened with %q as a checkpoint: k=%q, want v", bad, v)
		}
		c.Close()
	}
}

// A config opened from a checkpoint, with nothing new to read, estimates
// the server's clock as one that read the config from the log does (from
// the server's time on the last entry), not from this machine's clock: the
// lease deadlines it judges are the same.
func TestCheckpointKeepsTheServersTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	w := e.open(sharedconfig.Options{})
	defer w.Close()
	if _, err := w.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	cp := e.checkpoint()
	time.Sleep(2 * time.Second) // the log is quiet: a fresh read still sees the put's time
	fresh := e.open(sharedconfig.Options{})
	defer fresh.Close()
	resumed := e.open(sharedconfig.Options{Resume: cp})
	defer resumed.Close()
	gap := resumed.Leases().Now().Sub(fresh.Leases().Now())
	if gap < -time.Second || gap > time.Second {
		t.Fatalf("opened from the checkpoint the server's clock reads %v from what a fresh open reads (the log has been quiet for 2s)", gap)
	}
}
