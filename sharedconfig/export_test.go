package sharedconfig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/exportfile"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// An import is one entry: it lands whole, after catching up with a writer
// that got in first, and with replace it removes what the file lacks.
func TestImportIsOneUpdate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, b := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	put(t, a, "keep", "1")
	put(t, a, "drop", "2")
	put(t, b, "late", "3") // a's copy is now stale: its import conflicts once
	before := must[uint64](t)(logtest.LastRevision(a.Log(), ctx))
	props := map[string]string{"keep": "1", "new": "x, y", "late": "changed"}
	r, err := a.Import(ctx, props, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (sharedconfig.ImportResult{Added: 1, Updated: 1, Unchanged: 1, Removed: 1}); r != want {
		t.Fatalf("Import: %+v, want %+v", r, want)
	}
	if after := must[uint64](t)(logtest.LastRevision(a.Log(), ctx)); after != before+1 {
		t.Fatalf("the import took revisions %d to %d: want one entry", before+1, after)
	}
	if got := contents(a); !maps.Equal(got, props) {
		t.Fatalf("after the import: %v, want %v", got, props)
	}
	// Nothing to change: nothing written.
	if _, err := a.Import(ctx, props, true); err != nil {
		t.Fatal(err)
	}
	if after := must[uint64](t)(logtest.LastRevision(a.Log(), ctx)); after != before+1 {
		t.Fatalf("an import that changes nothing wrote revision %d", after)
	}
}

// Export's file reads back as the same keys and values.
func TestExportReadsBack(t *testing.T) {
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	put(t, c, "a", "1")
	put(t, c, "b, c", "\"quoted\"")
	exported := exportfile.New("test", e.name, c.State())
	if exported.Revision != c.State().Revision() || exported.Properties["a"].Revision == 0 {
		t.Fatalf("the export is at revision %d, a at %d; want the config's, %d", exported.Revision, exported.Properties["a"].Revision, c.State().Revision())
	}
	data, err := json.Marshal(exported)
	if err != nil {
		t.Fatal(err)
	}
	file, err := exportfile.Parse(data)
	if err != nil || !maps.Equal(file.Props, contents(c)) || len(file.Leased) != 0 {
		t.Fatalf("Parse(New(State)): %v, %v; want %v", file.Props, err, contents(c))
	}
}

// An export marks the keys attached to a lease, and lists the leases; the
// file reads back with those keys marked, so that an import can refuse to
// make them permanent.
func TestExportMarksLeasedKeys(t *testing.T) {
	e := newLeaseEnv(t)
	a, _ := membership(t, e)
	put(t, a, "plain", "p")
	exported := exportfile.New("test", "x", a.State())
	if p := exported.Properties["/servers/1"]; p.Lease != "a" {
		t.Fatalf("the export of /servers/1: %+v, want lease a", p)
	}
	if p := exported.Properties["plain"]; p.Lease != "" {
		t.Fatalf("the export of a plain key: %+v, want no lease", p)
	}
	if l := exported.Leases["b"]; l.Holder != "b" || l.TTL != "10s" || l.Deadline.IsZero() {
		t.Fatalf("the export of lease b: %+v", l)
	}
	data, err := json.Marshal(exported)
	if err != nil {
		t.Fatal(err)
	}
	file, err := exportfile.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"/servers/1": "a", "/servers/2": "b"}; !maps.Equal(file.Leased, want) {
		t.Fatalf("leased keys read back: %v, want %v", file.Leased, want)
	}
	if got, want := file.WithoutLeased(), map[string]string{"plain": "p"}; !maps.Equal(got, want) {
		t.Fatalf("without the leased keys: %v, want %v", got, want)
	}
	if len(file.Props) != 3 {
		t.Fatalf("every key read back: %v", file.Props)
	}
}

// Importing a leased key as a plain key (--leased=plain) into the config
// that holds it detaches it from its lease: that is a change, even with the
// same value.
func TestImportOfALeasedKeyDetachesIt(t *testing.T) {
	e := newLeaseEnv(t)
	a, _ := membership(t, e)
	v, _ := a.Get("/servers/1")
	r, err := a.Import(context.Background(), map[string]string{"/servers/1": v}, false)
	if err != nil || r.Updated != 1 || r.Unchanged != 0 {
		t.Fatalf("Import = %+v, %v; want 1 updated", r, err)
	}
	if p, _ := a.State().Lookup("/servers/1"); p.Value != v || p.Lease != "" {
		t.Fatalf("/servers/1 after the import: %+v; want %q with no lease", p, v)
	}
}

// bigProps is an import larger than one entry of the server (1 MiB): n keys
// of 1000 bytes.
func bigProps(n int) map[string]string {
	props := map[string]string{}
	for i := range n {
		props[fmt.Sprintf("big.%04d", i)] = fmt.Sprintf("%04d", i) + strings.Repeat("v", 996)
	}
	return props
}

// An import whose keys and values alone are larger than the log takes in
// one update is written as a snapshot at once: its update is never encoded
// only to be refused. One that changes a few keys of a large file is still
// one update.
func TestTooLargeImportIsNotBuiltAsAnUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := jstest.Server(t)
	l, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "test", "toolarge", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := &appendSizes{Log: l}
	c, err := sharedconfig.Open(ctx, log, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	props := bigProps(2000)
	if r, err := c.Import(ctx, props, false); err != nil || !r.AsSnapshot {
		t.Fatalf("Import = %+v, %v; want it written as a snapshot", r, err)
	}
	if sizes := log.taken(); len(sizes) != 0 {
		t.Errorf("the import offered updates of %v bytes (the log takes %d)", sizes, l.MaxUpdateSize())
	}
	props["big.0000"] = "changed"
	if r, err := c.Import(ctx, props, false); err != nil || r.AsSnapshot || r.Updated != 1 {
		t.Fatalf("Import of one change = %+v, %v; want one update", r, err)
	}
}

// appendSizes is a log that records the size of each update offered to it.
type appendSizes struct {
	*jetstream.Log
	mu    sync.Mutex
	sizes []int
}

func (l *appendSizes) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	l.mu.Lock()
	l.sizes = append(l.sizes, len(data))
	l.mu.Unlock()
	return l.Log.AppendAfter(ctx, last, data)
}

func (l *appendSizes) taken() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sizes
}

// An import too large for one update lands whole as a snapshot, after
// catching up with a writer that got in first (whose key stays); its keys
// take the snapshot's revision, in the writer and in a fresh process, and a
// watcher hears each key it set.
func TestBigImportIsOneSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	a, b := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	put(t, a, "keep", "1")
	put(t, b, "late", "2") // a's copy is now stale: its import conflicts once
	heard := make(chan sharedconfig.Change, 16)
	stop, err := b.Watch("big.", func(ch sharedconfig.Change) { heard <- ch }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	props := bigProps(2000)
	r, err := a.Import(ctx, props, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (sharedconfig.ImportResult{Added: 2000, AsSnapshot: true}); r != want {
		t.Fatalf("Import: %+v, want %+v", r, want)
	}
	props["keep"], props["late"] = "1", "2"
	rev := must[uint64](t)(logtest.LastRevision(a.Log(), ctx))
	fresh := e.open(sharedconfig.Options{})
	for who, c := range map[string]*sharedconfig.Config{"the importer": a, "a fresh process": fresh} {
		if got := contents(c); !maps.Equal(got, props) {
			t.Fatalf("%s holds %d keys, want the %d of the import and the two before", who, len(got), len(props)-2)
		}
		if p, _ := c.State().Lookup("big.0042"); p.Revision != rev {
			t.Errorf("%s: an imported key has revision %d, want the snapshot's, %d", who, p.Revision, rev)
		}
		if p, _ := c.State().Lookup("late"); p.Revision == rev {
			t.Errorf("%s: a key the import did not set took its revision", who)
		}
	}
	select {
	case ch := <-heard:
		if !ch.Snapshot || len(ch.Ops) != 2000 || ch.Ops[42].Kind != "put" || ch.Ops[42].Key != "big.0042" {
			t.Fatalf("the watcher heard a change with %d ops (snapshot %v), want the 2000 puts", len(ch.Ops), ch.Snapshot)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher heard nothing of the import")
	}
}

// A writer that writes during a big import loses nothing: each of its keys
// is there afterwards, beside every imported key. It writes a burst, not
// forever: a writer that never stops can starve a big import (see
// docs/consistency.md), which the deadline turns into a failure.
func TestBigImportLosesNoConcurrentWrite(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newEnv(t)
	a, b := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	put(t, a, "start", "1")
	const n = 40
	written := make(chan struct{})
	go func() {
		defer close(written)
		for i := range n {
			if _, err := b.Put(ctx, fmt.Sprintf("w.%d", i), "x"); err != nil {
				t.Error(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	props := bigProps(2000)
	if _, err := a.Import(ctx, props, false); err != nil {
		t.Fatal(err)
	}
	<-written
	got := contents(e.open(sharedconfig.Options{}))
	for i := range n {
		if _, ok := got[fmt.Sprintf("w.%d", i)]; !ok {
			t.Fatalf("the concurrent write w.%d (of %d) was lost", i, n)
		}
	}
	for k := range props {
		if got[k] != props[k] {
			t.Fatalf("imported key %s is %q", k, got[k])
		}
	}
}
