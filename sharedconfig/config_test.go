package sharedconfig_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"maps"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

func TestMain(m *testing.M) {
	jstest.MoreInParallel()
	testmain.Run(m)
}

var configCount atomic.Int64

// env is one server and one config name; open gives each client its own
// connection, as separate processes would have.
type env struct {
	t    *testing.T
	srv  *localserver.Server
	name string
}

func newEnv(t *testing.T) *env {
	return &env{t: t, srv: jstest.Server(t), name: fmt.Sprint("cfg", configCount.Add(1))}
}

func (e *env) open(o sharedconfig.Options) *sharedconfig.Config {
	e.t.Helper()
	nc := jstest.Connect(e.t, e.srv)
	return openOn(e.t, nc, e.name, o)
}

func openOn(t *testing.T, nc *nats.Conn, name string, o sharedconfig.Options) *sharedconfig.Config {
	t.Helper()
	ctx := context.Background()
	l, err := jetstream.OpenLog(ctx, nc, "test", name, jetstream.LogOptions{})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	c, err := sharedconfig.Open(ctx, l, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

func contents(c *sharedconfig.Config) map[string]string {
	m := map[string]string{}
	for k, p := range c.State().All() {
		m[k] = p.Value
	}
	return m
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

type answer struct {
	value string
	ok    bool
}

// answers returns a function that turns a write's result into an answer
// (the previous value, and whether there was one), failing the test on an
// error.
func answers(t *testing.T) func(sharedconfig.WriteResult, error) answer {
	return func(r sharedconfig.WriteResult, err error) answer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return answer{r.Previous.Value, r.Existed}
	}
}

// previous is what a write found: the value, and whether the key had one.
func previous(r sharedconfig.WriteResult, err error) (string, bool, error) {
	return r.Previous.Value, r.Existed, err
}

// written returns a function that says whether a write wrote, failing the
// test on an error.
func written(t *testing.T) func(sharedconfig.WriteResult, error) bool {
	return func(r sharedconfig.WriteResult, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r.Written
	}
}

func put(t *testing.T, c *sharedconfig.Config, key, value string) {
	t.Helper()
	if _, err := c.Put(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
}

func TestOperations(t *testing.T) {
	ctx := context.Background()
	ans := answers(t)
	c := newEnv(t).open(sharedconfig.Options{})

	if got := ans(c.Put(ctx, "a", "1")); got != (answer{"", false}) {
		t.Errorf("Put new = %v", got)
	}
	if got := ans(c.Put(ctx, "a", "2")); got != (answer{"1", true}) {
		t.Errorf("Put existing = %v", got)
	}
	if v, ok := c.Get("a"); v != "2" || !ok {
		t.Errorf("Get = %q, %v", v, ok)
	}
	if _, ok := c.Get("nope"); ok {
		t.Error("Get of an absent key found it")
	}
	if got := ans(c.Put(ctx, "a", "3", sharedconfig.IfAbsent())); got != (answer{"2", true}) {
		t.Errorf("Put IfAbsent existing = %v", got)
	}
	if got := ans(c.Put(ctx, "b", "x", sharedconfig.IfAbsent())); got != (answer{"", false}) {
		t.Errorf("Put IfAbsent new = %v", got)
	}
	if got := ans(c.Replace(ctx, "a", "4")); got != (answer{"2", true}) {
		t.Errorf("Replace existing = %v", got)
	}
	if got := ans(c.Replace(ctx, "nope", "4")); got != (answer{"", false}) {
		t.Errorf("Replace absent = %v", got)
	}
	if _, ok := c.Get("nope"); ok {
		t.Error("Replace of an absent key created it")
	}
	if ok := written(t)(c.Replace(ctx, "a", "5", sharedconfig.IfValue("wrong"))); ok {
		t.Error("Replace IfValue with a wrong value replaced")
	}
	if ok := written(t)(c.Replace(ctx, "nope", "5", sharedconfig.IfValue(""))); ok {
		t.Error("Replace IfValue of an absent key replaced")
	}
	if ok := written(t)(c.Replace(ctx, "a", "5", sharedconfig.IfValue("4"))); !ok {
		t.Error("Replace IfValue with the right value did not replace")
	}
	if ok := written(t)(c.Remove(ctx, "a", sharedconfig.IfValue("4"))); ok {
		t.Error("Remove IfValue with a wrong value removed")
	}
	if ok := written(t)(c.Remove(ctx, "a", sharedconfig.IfValue("5"))); !ok {
		t.Error("Remove IfValue with the right value did not remove")
	}
	if got := ans(c.Remove(ctx, "b")); got != (answer{"x", true}) {
		t.Errorf("Remove existing = %v", got)
	}
	if got := ans(c.Remove(ctx, "b")); got != (answer{"", false}) {
		t.Errorf("Remove absent = %v", got)
	}
	checkOrderAndClear(t, c)

}

// TestWriteOptions: each condition refuses a write it does not allow, and
// options that can never write are refused before anything is appended.
func TestWriteOptions(t *testing.T) {
	ctx := context.Background()
	c := newEnv(t).open(sharedconfig.Options{})
	put(t, c, "k", "v1")
	rev := c.State().Revision()
	refused := []struct {
		name  string
		write func() (sharedconfig.WriteResult, error)
	}{
		{"Put IfAbsent of a set key", func() (sharedconfig.WriteResult, error) { return c.Put(ctx, "k", "x", sharedconfig.IfAbsent()) }},
		{"Put IfValue of another value", func() (sharedconfig.WriteResult, error) { return c.Put(ctx, "k", "x", sharedconfig.IfValue("v0")) }},
		{"Put IfValue of an absent key", func() (sharedconfig.WriteResult, error) { return c.Put(ctx, "new", "x", sharedconfig.IfValue("")) }},
		{"Put IfRevision of another revision", func() (sharedconfig.WriteResult, error) { return c.Put(ctx, "k", "x", sharedconfig.IfRevision(rev+1)) }},
		{"Remove IfRevision of another revision", func() (sharedconfig.WriteResult, error) { return c.Remove(ctx, "k", sharedconfig.IfRevision(rev-1)) }},
		{"Replace IfValue and IfRevision, the revision wrong", func() (sharedconfig.WriteResult, error) {
			return c.Replace(ctx, "k", "x", sharedconfig.IfValue("v1"), sharedconfig.IfRevision(rev+1))
		}},
	}
	for _, w := range refused {
		if r, err := w.write(); err != nil || r.Written || !r.Existed && w.name != "Put IfValue of an absent key" {
			t.Errorf("%s = %+v, %v; want not written", w.name, r, err)
		}
	}
	never := []struct {
		name  string
		write func() (sharedconfig.WriteResult, error)
	}{
		{"Replace IfAbsent", func() (sharedconfig.WriteResult, error) { return c.Replace(ctx, "k", "x", sharedconfig.IfAbsent()) }},
		{"Remove IfAbsent", func() (sharedconfig.WriteResult, error) { return c.Remove(ctx, "k", sharedconfig.IfAbsent()) }},
		{"Put IfAbsent IfValue", func() (sharedconfig.WriteResult, error) {
			return c.Put(ctx, "k", "x", sharedconfig.IfAbsent(), sharedconfig.IfValue("v1"))
		}},
		{"Remove WithLease", func() (sharedconfig.WriteResult, error) { return c.Remove(ctx, "k", sharedconfig.WithLease("L")) }},
		{"Replace IfValue not UTF-8", func() (sharedconfig.WriteResult, error) {
			return c.Replace(ctx, "k", "x", sharedconfig.IfValue("\xff"))
		}},
	}
	for _, w := range never {
		if r, err := w.write(); err == nil || r.Written {
			t.Errorf("%s = %+v, %v; want an error", w.name, r, err)
		}
	}
	if last, err := logtest.LastRevision(c.Log(), ctx); err != nil || last != rev {
		t.Fatalf("refused writes appended: the log is at %d (%v), was %d", last, err, rev)
	}
	r, err := c.Put(ctx, "k", "v2", sharedconfig.IfValue("v1"), sharedconfig.IfRevision(rev))
	if err != nil || !r.Written || r.Previous != (sharedconfig.Property{Value: "v1", Revision: rev}) {
		t.Fatalf("Put IfValue IfRevision, both right = %+v, %v", r, err)
	}
}

// checkOrderAndClear: the state iterates in key order, with a prefix too,
// and Clear empties the config.
func checkOrderAndClear(t *testing.T, c *sharedconfig.Config) {
	ctx := context.Background()
	for _, k := range []string{"z", "m", "a/1", "a"} {
		put(t, c, k, "v"+k)
	}
	var keys []string
	for k := range c.State().All() {
		keys = append(keys, k)
	}
	if strings.Join(keys, ",") != "a,a/1,m,z" {
		t.Errorf("All is not sorted: %v", keys)
	}
	keys = nil
	for k := range c.State().WithPrefix("a") {
		keys = append(keys, k)
	}
	if strings.Join(keys, ",") != "a,a/1" {
		t.Errorf("WithPrefix(a) = %v", keys)
	}
	if n := must[int](t)(c.Clear(ctx)); n != 4 {
		t.Errorf("Clear removed %d, want 4", n)
	}
	if n := must[int](t)(c.Clear(ctx)); n != 0 {
		t.Errorf("Clear of an empty config removed %d", n)
	}
	if c.State().Len() != 0 {
		t.Errorf("after Clear: %v", contents(c))
	}
	if _, err := c.Put(ctx, "k\xff", "v"); !errors.Is(err, sharedconfig.ErrNotUTF8) {
		t.Errorf("Put of a non-UTF-8 key: %v", err)
	}
}

// The original answered conditional operations from a stale copy; these
// answers must hold for the shared config.
func TestStaleCopyAnswersAreTrue(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ans := answers(t)
	fresh, stale := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})

	put(t, fresh, "k", "v1")
	// stale has not seen k.
	if got := ans(stale.Put(ctx, "k", "mine", sharedconfig.IfAbsent())); got != (answer{"v1", true}) {
		t.Errorf("stale Put IfAbsent = %v, want the existing v1", got)
	}
	put(t, fresh, "k", "v2")
	if got := ans(stale.Put(ctx, "k", "v3")); got != (answer{"v2", true}) {
		t.Errorf("stale Put = %v, want the latest old value v2", got)
	}
	put(t, fresh, "n", "x")
	if got := ans(stale.Replace(ctx, "n", "y")); got != (answer{"x", true}) {
		t.Errorf("stale Replace of a key it has not seen = %v, want replaced from x", got)
	}
	put(t, fresh, "r", "x")
	if got := ans(stale.Remove(ctx, "r")); got != (answer{"x", true}) {
		t.Errorf("stale Remove of a key it has not seen = %v, want removed x", got)
	}
	put(t, fresh, "r", "x")
	if ok := written(t)(stale.Remove(ctx, "r", sharedconfig.IfValue("x"))); !ok {
		t.Error("stale Remove IfValue with the shared value did not remove")
	}
	put(t, fresh, "q", "new")
	if ok := written(t)(stale.Replace(ctx, "q", "newer", sharedconfig.IfValue("new"))); !ok {
		t.Error("stale Replace IfValue with the shared value did not replace")
	}

	// CLEAR from a copy that looks empty still clears the shared config.
	e2 := newEnv(t)
	writer, empty := e2.open(sharedconfig.Options{}), e2.open(sharedconfig.Options{})
	put(t, writer, "a", "1")
	if empty.State().Len() != 0 {
		t.Fatal("the second copy is not stale")
	}
	if n := must[int](t)(empty.Clear(ctx)); n != 1 {
		t.Errorf("Clear from an empty-looking copy removed %d, want 1", n)
	}
	if err := writer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if writer.State().Len() != 0 {
		t.Errorf("shared config after Clear: %v", contents(writer))
	}
}

func TestCompactionPolicy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{Compaction: true})
	for i := range 4 {
		put(t, c, fmt.Sprint(i), "v")
	}
	for i := range 4 {
		if _, err := c.Remove(ctx, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := sharedconfig.EntriesSinceCompaction(c); n != 8 {
		t.Fatalf("entries after 4 puts and 4 removes = %d, want 8", n)
	}
	written(t)(c.Remove(ctx, "none", sharedconfig.IfValue("x"))) // the fifth remove, though it removes nothing
	if n := sharedconfig.EntriesSinceCompaction(c); n != 0 {
		t.Fatalf("entries after the fifth remove = %d, want 0 (compacted)", n)
	}
	put(t, c, "x", "v")
	must[int](t)(c.Clear(ctx))
	if n := sharedconfig.EntriesSinceCompaction(c); n != 0 {
		t.Fatalf("entries after Clear = %d, want 0 (compacted)", n)
	}

	bounded := e.open(sharedconfig.Options{CompactionPolicy: &sharedconfig.CompactionPolicy{MaxEntries: 10}})
	for i := range 25 {
		put(t, bounded, "k", fmt.Sprint(i))
		if n := sharedconfig.EntriesSinceCompaction(bounded); n >= 10 {
			t.Fatalf("after put %d the history is %d entries, over the bound of 10", i, n)
		}
	}
	last, err := logtest.LastRevision(bounded.Log(), ctx)
	if err != nil {
		t.Fatal(err)
	}
	reader := e.open(sharedconfig.Options{})
	if v, _ := reader.Get("k"); v != "24" || reader.State().Revision() != last {
		t.Fatalf("a new reader sees k=%q at %d, want 24 at %d", v, reader.State().Revision(), last)
	}
}

// 8 synchronizers on separate connections, 250 increments each.
func TestConcurrentCounter(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for range writers {
		incrementEach(t, &wg, openCounter(t, srv, "counter"), each)
	}
	wg.Wait()
	st, rev := openCounter(t, srv, "counter").State()
	if st != writers*each {
		t.Fatalf("counter = %d, want %d", st, writers*each)
	}
	// One initial entry plus one per increment: nothing lost or doubled.
	if rev != 1+writers*each {
		t.Fatalf("log at revision %d, want %d", rev, 1+writers*each)
	}
}

// openCounter opens the counter name on its own connection to srv.
func openCounter(t *testing.T, srv *localserver.Server, name string, opts ...statesync.Option) *statesync.Synchronizer[example.Counter] {
	t.Helper()
	l, err := jetstream.OpenLog(context.Background(), jstest.Connect(t, srv), "test", name, jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := statesync.New[example.Counter](l, example.CounterCodec{}, opts...)
	if err := s.Initialize(context.Background(), example.CounterStart{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// incrementEach increments s n times in the background, one at a time.
func incrementEach(t *testing.T, wg *sync.WaitGroup, s *statesync.Synchronizer[example.Counter], n int) {
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for range n {
			if _, err := example.Increment(ctx, s); err != nil {
				t.Error(err)
				return
			}
		}
	})
}

// Each rule of the policy is the caller's: here every second remove
// compacts, a clear does not, and neither does any number of puts.
func TestCompactionPolicyConfigured(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{CompactionPolicy: &sharedconfig.CompactionPolicy{Removes: 2}})
	for i := range 30 {
		put(t, c, fmt.Sprint(i), "v")
	}
	written(t)(c.Remove(ctx, "0"))
	if n := sharedconfig.EntriesSinceCompaction(c); n != 31 {
		t.Fatalf("entries after 30 puts and a remove = %d, want 31", n)
	}
	written(t)(c.Remove(ctx, "1"))
	if n := sharedconfig.EntriesSinceCompaction(c); n != 0 {
		t.Fatalf("entries after the second remove = %d, want 0 (compacted)", n)
	}
	put(t, c, "x", "v")
	must[int](t)(c.Clear(ctx))
	if n := sharedconfig.EntriesSinceCompaction(c); n != 2 {
		t.Fatalf("entries after a put and a clear = %d, want 2 (a clear does not compact)", n)
	}
}

// A Removes count past MaxInt64 (a flag takes any uint) means almost
// never, not every remove: its conversion to int was negative, so the first
// remove compacted.
func TestCompactionPolicyHugeRemoves(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, n := range []uint{math.MaxUint, math.MaxUint - 1, 1<<63 + 1} {
		c := e.open(sharedconfig.Options{CompactionPolicy: &sharedconfig.CompactionPolicy{Removes: n}})
		put(t, c, "k", "v")
		written(t)(c.Remove(ctx, "k"))
		if got := sharedconfig.EntriesSinceCompaction(c); got == 0 {
			t.Fatalf("Removes %d: the first remove compacted", n)
		}
	}
}

func TestCompactionRacingWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const writers, each = 4, 60
	var wg sync.WaitGroup
	for w := range writers {
		c := e.open(sharedconfig.Options{})
		wg.Go(func() {
			for i := range each {
				if _, err := c.Put(context.Background(), fmt.Sprintf("w%d/%03d", w, i), fmt.Sprint(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	compactor := e.open(sharedconfig.Options{})
	stale := e.open(sharedconfig.Options{}) // never refreshes until the end
	done := make(chan struct{})
	compactions := 0
	go func() {
		defer close(done)
		for range 15 {
			if err := compactor.Compact(context.Background()); err != nil {
				t.Error(err)
				return
			}
			compactions++
			time.Sleep(5 * time.Millisecond)
		}
	}()
	wg.Wait()
	<-done
	want := map[string]string{}
	for w := range writers {
		for i := range each {
			want[fmt.Sprintf("w%d/%03d", w, i)] = fmt.Sprint(i)
		}
	}
	if err := stale.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*sharedconfig.Config{"stale reader": stale, "new reader": e.open(sharedconfig.Options{})} {
		if got := contents(c); !maps.Equal(got, want) {
			t.Errorf("%s sees %d keys, want %d", name, len(got), len(want))
		}
	}
	if compactions != 15 {
		t.Errorf("%d compactions landed, want 15", compactions)
	}
}

func TestLargeStateCompacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// On a server whose max payload is 64 KiB, 80 values of 4 KiB are a
	// state of 5 max payloads, as 5 MiB are on a server of 1 MiB: entries'
	// limit, and so a snapshot's chunks, scale with the max payload, and
	// the state is written and read back in as many chunks, for a
	// sixteenth of the work.
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir(), MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	e := &env{t: t, srv: srv, name: fmt.Sprint("cfg", configCount.Add(1))}
	c := e.open(sharedconfig.Options{})
	value := strings.Repeat("v", 4<<10)
	want := map[string]string{}
	for i := range 80 { // 80 × 4 KiB = 320 KiB, 5 max payloads
		k := fmt.Sprintf("key%02d", i)
		want[k] = value + k
		if _, err := c.Put(ctx, k, want[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Compact(ctx); err != nil {
		t.Fatalf("compacting 5 max payloads: %v", err)
	}
	if _, err := c.Put(ctx, "after", "x"); err != nil {
		t.Fatal(err)
	}
	want["after"] = "x"
	if got := contents(e.open(sharedconfig.Options{})); !maps.Equal(got, want) {
		t.Fatalf("a new client rebuilt %d keys, want %d", len(got), len(want))
	}
}

func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srv := jstest.ServerAt(t, dir, "127.0.0.1:0")
	listen := strings.TrimPrefix(srv.ClientURL(), "nats://")
	nc := jstest.Connect(t, srv)
	a := openOn(t, nc, "restart", sharedconfig.Options{})
	ncB := jstest.Connect(t, srv)
	b := openOn(t, ncB, "restart", sharedconfig.Options{})
	if _, err := a.Put(ctx, "k", "before"); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	jstest.ServerAt(t, dir, listen)
	// The clients reconnect on their own and go on. (A write made before
	// its client has reconnected is refused, unsent: see
	// TestNoWriteWhileDisconnected.)
	opCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	waitConnected(opCtx, t, nc, ncB)
	old, _, err := previous(b.Put(opCtx, "k", "after"))
	if err != nil || old != "before" {
		t.Fatalf("Put after restart = %q, %v; want the old value before", old, err)
	}
	if err := a.Refresh(opCtx); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.Get("k"); v != "after" {
		t.Fatalf("a sees %q after restart, want after", v)
	}
}

// waitConnected waits until every one of conns is connected.
func waitConnected(ctx context.Context, t *testing.T, conns ...*nats.Conn) {
	t.Helper()
	for _, nc := range conns {
		for !nc.IsConnected() {
			if ctx.Err() != nil {
				t.Fatalf("the client did not reconnect: %v", nc.Status())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestGarbageEntry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	if _, err := c.Put(ctx, "k", "good"); err != nil {
		t.Fatal(err)
	}
	nc := jstest.Connect(t, e.srv)
	js, _ := natsjs.New(nc)
	cases := []struct{ kind, body string }{
		{"update", "not json"},
		{"update", `{"ops":[{"op":"explode"}]}`},
		{"update", `{"ops":[{"op":"put","key":"k"}]}`},
		{"snapshot", `{"properties":null}`},
	}
	for _, tc := range cases {
		msg := nats.NewMsg(jetstream.Subject("test", e.name))
		msg.Header.Set(jetstream.HeaderFormat, "1")
		msg.Header.Set(jetstream.HeaderKind, tc.kind)
		msg.Data = []byte(tc.body)
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Refresh(ctx)
		var entryErr *statesync.EntryError
		if !errors.As(err, &entryErr) || entryErr.Revision != ack.Sequence || !strings.Contains(err.Error(), jetstream.StreamName("test", e.name)) {
			t.Fatalf("Refresh over %q: %v; want an error naming the stream and entry %d", tc.body, err, ack.Sequence)
		}
		if v, _ := c.Get("k"); v != "good" {
			t.Fatalf("reads after garbage: %q, want the last good value", v)
		}
		if _, err := c.Put(ctx, "k", "new"); !errors.As(err, &entryErr) {
			t.Fatalf("a write past garbage: %v; want it refused with the entry error", err)
		}
		// The next case starts on a clean config.
		e.name = fmt.Sprint("cfg", configCount.Add(1))
		c = e.open(sharedconfig.Options{})
		put(t, c, "k", "good")
	}
}

// GET reads the local copy: no I/O and no allocation.
func TestGetDoesNotAllocate(t *testing.T) {
	c := newEnv(t).open(sharedconfig.Options{})
	for i := range 1000 {
		put(t, c, fmt.Sprint("key", i), "value")
	}
	if allocs := testing.AllocsPerRun(1000, func() { c.Get("key500") }); allocs != 0 {
		t.Fatalf("GET allocates %.1f times", allocs)
	}
}

// Opening a config that exists reads it and publishes nothing: asking
// where the log ends costs less than the first entry's conditional append,
// which the server would refuse.
func TestOpeningAnExistingConfigPublishesNothing(t *testing.T) {
	e := newEnv(t)
	put(t, e.open(sharedconfig.Options{}), "a", "1")
	nc := jstest.Connect(t, e.srv)
	sub, err := nc.SubscribeSync(jetstream.Subject("test", e.name))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := e.open(sharedconfig.Options{})
	if got := contents(c); got["a"] != "1" {
		t.Fatalf("opened %v, want a=1", got)
	}
	nc.Flush()
	if n, _, _ := sub.Pending(); n != 0 {
		t.Errorf("opening an existing config published %d messages on its subject, want none", n)
	}
}
