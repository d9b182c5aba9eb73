package cmd

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// indexEnv is one config on a server of its own, with a cache directory
// of its own, driven through the library.
type indexEnv struct {
	t     *testing.T
	ctx   context.Context
	nc    *nats.Conn
	name  string
	flags *rootFlags
}

// newIndexEnv starts t in parallel: its cache directory is its own.
func newIndexEnv(t *testing.T) *indexEnv {
	t.Parallel()
	srv := jstest.Server(t)
	flags := &rootFlags{cacheDir: filepath.Join(t.TempDir(), "cache")}
	return &indexEnv{t: t, ctx: context.Background(), nc: jstest.Connect(t, srv), name: "idx", flags: flags}
}

// open opens the config afresh, from the whole log, as holder.
func (e *indexEnv) open(holder string) *sharedconfig.Config {
	e.t.Helper()
	c, err := sharedconfig.Open(e.ctx, e.log(), sharedconfig.Options{Holder: holder})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *indexEnv) log() *jetstream.Log {
	e.t.Helper()
	log, err := jetstream.OpenLog(e.ctx, e.nc, "cache", e.name, jetstream.LogOptions{Writer: "t"})
	if err != nil {
		e.t.Fatal(err)
	}
	return log
}

// save leaves a copy of the whole config, as read now, in the cache.
func (e *indexEnv) save() {
	e.t.Helper()
	log := e.log()
	c := e.open("reader")
	defer c.Close()
	e.flags.replicaFor(e.nc, log).save(c, time.Now().Add(time.Minute), nil)
}

// oneKey opens the config for key from the cache's index, as get KEY
// does; nil when it did not open so.
func (e *indexEnv) oneKey(key string) *sharedconfig.Config {
	log := e.log()
	return e.flags.replicaFor(e.nc, log).openOneKey(e.ctx, log, key, sharedconfig.Options{MostlyReads: true})
}

// same checks that key, and the revision, read from the index are what a
// whole read gives. It reports whether the index was used.
func (e *indexEnv) same(key, step string) bool {
	e.t.Helper()
	one := e.oneKey(key)
	if one == nil {
		return false
	}
	defer one.Close()
	whole := e.open("reader")
	defer whole.Close()
	if one.State().Revision() != whole.State().Revision() {
		e.t.Fatalf("%s: get %s from the index at revision %d, the whole config at %d", step, key, one.State().Revision(), whole.State().Revision())
	}
	p1, ok1 := one.State().Lookup(key)
	p2, ok2 := whole.State().Lookup(key)
	if p1 != p2 || ok1 != ok2 {
		e.t.Fatalf("%s: get %s from the index: %+v (found %v); from the whole config: %+v (found %v)", step, key, p1, ok1, p2, ok2)
	}
	return true
}

// A get answered from the index is the get a whole read answers, over
// random histories of puts, removes, clears, compactions, leases
// (registered, revoked, left to expire) and the config destroyed and
// created again, with the cache saved now and then between them.
func TestGetFromTheIndexIsTheWholeConfigs(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	e := newIndexEnv(t)
	holder := e.open("holder") // registers leases and never refreshes them
	defer func() { holder.Close() }()
	keys := []string{"a", "b", "c", "d", "e", "f", "lease"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	leases := []string{"L1", "L2"}
	usedIndex := 0
	for step := range 120 {
		what := e.randomStep(rng, &holder, key(), leases[rng.IntN(len(leases))])
		if testing.Verbose() {
			t.Logf("step %d: %s", step, what)
		}
		for range 3 {
			if e.same(key(), fmt.Sprintf("step %d (%s)", step, what)) {
				usedIndex++
			}
		}
	}
	for _, k := range append(keys, "never") {
		if e.same(k, "the end") {
			usedIndex++
		}
	}
	if usedIndex < 100 {
		t.Fatalf("the index answered %d of %d gets: too few to compare", usedIndex, 120*3+len(keys)+1)
	}
}

// randomStep changes the config at random and says how.
func (e *indexEnv) randomStep(rng *rand.Rand, holder **sharedconfig.Config, key, lease string) string {
	e.t.Helper()
	h := *holder
	var err error
	what := ""
	switch n := rng.IntN(100); {
	case n < 35:
		what = "put " + key
		_, err = h.Put(e.ctx, key, fmt.Sprint("v", rng.IntN(1000)))
	case n < 45:
		what = "put " + key + " with lease " + lease
		if _, ok := h.State().Lease(lease); !ok {
			_, _ = h.Leases().Register(e.ctx, lease, time.Second)
		}
		_, err = h.Put(e.ctx, key, fmt.Sprint("leased", rng.IntN(1000)), sharedconfig.WithLease(lease))
	case n < 60:
		what = "remove " + key
		_, err = h.Remove(e.ctx, key)
	case n < 63:
		what = "clear"
		_, err = h.Clear(e.ctx)
	case n < 68:
		what = "compact"
		err = h.Compact(e.ctx)
	case n < 76:
		what = "register " + lease
		_, err = h.Leases().Register(e.ctx, lease, time.Second)
	case n < 80:
		what = "revoke " + lease
		_, err = h.Leases().Revoke(e.ctx, lease)
	case n < 82:
		what = "let the leases expire"
		e.expireAll()
	case n < 97:
		what = "save the cache"
		e.save()
	default:
		what = "destroy and create again"
		if err := jetstream.DeleteConfig(e.ctx, e.nc, "cache", e.name); err != nil {
			e.t.Fatal(err)
		}
		h.Close()
		*holder = e.open("holder")
	}
	if err != nil {
		what += ": " + err.Error() // a lease that expired, say: the history goes on
	}
	return what
}

// expireAll waits for the leases to fall due and a keeper to write their
// expiry.
func (e *indexEnv) expireAll() {
	e.t.Helper()
	keeper := e.open("keeper")
	defer keeper.Close()
	stop := keeper.Leases().Keep(nil)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := keeper.Refresh(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		n := 0
		for range keeper.State().Leases() {
			n++
		}
		if n == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatal("the leases did not expire within 10s")
}

// A lease's expiry reaches the state as an entry in the log, written by a
// running process after the deadline: until it lands a leased key is there
// for a get from the index as for a whole read, after it gone from both,
// though the cache was saved while the lease lived.
func TestLeaseExpiryReachesAGetFromTheIndex(t *testing.T) {
	e := newIndexEnv(t)
	holder := e.open("holder")
	if _, err := holder.Leases().Register(e.ctx, "L", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Put(e.ctx, "k", "leased", sharedconfig.WithLease("L")); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Put(e.ctx, "plain", "p"); err != nil {
		t.Fatal(err)
	}
	holder.Close() // dies holding the lease: nothing revokes it
	e.save()
	time.Sleep(2 * time.Second)
	if !e.same("k", "past the deadline, no expiry written") {
		t.Fatal("the index was not used")
	}
	if c := e.oneKey("k"); c == nil {
		t.Fatal("the index was not used")
	} else if p, ok := c.State().Lookup("k"); !ok || p.Lease != "L" {
		t.Fatalf("past the deadline, before any expiry: k is %+v, %v; want it, under L", p, ok)
	} else {
		c.Close()
	}
	e.expireAll()
	if !e.same("k", "expired") || !e.same("plain", "expired") {
		t.Fatal("the index was not used")
	}
	c := e.oneKey("k")
	defer c.Close()
	if p, ok := c.State().Lookup("k"); ok {
		t.Fatalf("after the expiry: k is %+v; want it gone", p)
	}
}

// get KEY answers from the index when the cache file has one: a value
// changed in the index (which only its owner can write) shows until the
// key changes on the server; a get after a later write to another key
// still answers from it. Its answer, in JSON, is the whole read's.
func TestOneShotGetAnswersFromTheIndex(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "put", "a", "1")
	e.run(0, "put", "b", "2")
	e.run(0, "get-all") // saves the copy and its index
	path := e.file("someConfig")
	for _, args := range [][]string{{"get", "a"}, {"get", "nope"}, {"--revisions", "get", "b"}} {
		want := e.runAny(append([]string{"--no-cache", "-o", "json"}, args...)...)
		if got := e.runAny(append([]string{"-o", "json"}, args...)...); got != want {
			t.Fatalf("%q from the index: %q; from the whole config: %q", args, got, want)
		}
	}
	e.rewriteIndex(path, "a", "from the index")
	if out := e.run(0, "get", "a", "--raw"); out != "from the index" {
		t.Fatalf("get a after a change in the index: %q; want the index's value", out)
	}
	e.run(0, "--no-cache", "put", "c", "3")
	if out := e.run(0, "get", "a", "--raw"); out != "from the index" {
		t.Fatalf("get a after a put of another key: %q; want the index's value", out)
	}
	e.run(0, "--no-cache", "put", "a", "4")
	if out := e.run(0, "get", "a", "--raw"); out != "4" {
		t.Fatalf("get a after a put of a: %q; want the server's 4", out)
	}
}

// runAny runs sharedconfig args and returns its stdout and exit status.
func (e *cacheEnv) runAny(args ...string) string {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"-s", "cache", "--writer", "t"}, args...), strings.NewReader(""), &stdout, &stderr)
	return fmt.Sprintf("%d %s", code, stdout.String())
}

// rewriteIndex sets key to value in the index of the cache file at path.
func (e *cacheEnv) rewriteIndex(path, key, value string) {
	e.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	head, body, _ := bytes.Cut(rest, []byte("\n"))
	var h struct {
		replicacache.Stamp
		Revision uint64
		Length   int
	}
	if err := jsonUnmarshal(head, &h); err != nil {
		e.t.Fatal(err)
	}
	checkpoint := body[:h.Length]
	var snap struct {
		Properties map[string]string `json:"properties"`
		Revisions  map[string]uint64 `json:"revisions"`
	}
	_, snapshot, _ := bytes.Cut(bytes.TrimPrefix(checkpoint, []byte("statesync-checkpoint 1\n")), []byte("\n"))
	if err := jsonUnmarshal(snapshot, &snap); err != nil {
		e.t.Fatal(err)
	}
	snap.Properties[key] = value
	props := func(yield func(replicacache.Property) bool) {
		for _, k := range slices.Sorted(maps.Keys(snap.Properties)) {
			if !yield(replicacache.Property{Key: k, Value: snap.Properties[k], Revision: snap.Revisions[k]}) {
				return
			}
		}
	}
	index, err := replicacache.NewIndex(checkpoint, props, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := replicacache.Save(path, h.Stamp, h.Revision, checkpoint, index); err != nil {
		e.t.Fatal(err)
	}
}

// get KEY asks for the stream's info once: the look-up that finds whether
// the config exists serves to open it. get KEY --raw from a copy that
// stands at the config's last entry asks for none: its one request is the
// direct get of that entry.
func TestOneShotGetLooksTheStreamUpOnce(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "put", "a", "1")
	e.run(0, "get-all") // saves the copy
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	requests, err := nc.SubscribeSync("$JS.API.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args          []string
		infos, others int
	}{{[]string{"get", "a"}, 1, -1}, {[]string{"get", "a", "--raw"}, 0, 1}, {[]string{"--no-cache", "get", "a"}, 1, -1}} {
		e.run(0, c.args...)
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, _ := requests.Pending()
		infos, others := 0, 0
		for range n {
			m, _ := requests.NextMsg(time.Second)
			if strings.HasPrefix(m.Subject, "$JS.API.STREAM.INFO.") {
				infos++
			} else {
				others++
			}
		}
		if infos != c.infos || c.others >= 0 && others != c.others {
			t.Errorf("%q asked for the stream's info %d times and made %d other requests, want %d and %d (-1: any)", c.args, infos, others, c.infos, c.others)
		}
	}
}

// A copy more than oneKeyMostEntries behind the stream is not used for one
// key (the get opens the config as any command does, from the whole copy,
// and saves a newer one); a newer copy is.
func TestGetFarBehindTheCacheSavesANewerCopy(t *testing.T) {
	e := newIndexEnv(t)
	w := e.open("writer")
	defer w.Close()
	if _, err := w.Put(e.ctx, "a", "0"); err != nil {
		t.Fatal(err)
	}
	e.save()
	if c := e.oneKey("a"); c == nil {
		t.Fatal("a copy just saved was not used")
	} else {
		c.Close()
	}
	for i := range oneKeyMostEntries + 1 {
		if _, err := w.Put(e.ctx, "b", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if c := e.oneKey("a"); c != nil {
		c.Close()
		t.Fatalf("a copy %d entries behind was used for one key", oneKeyMostEntries+1)
	}
	e.save()
	if !e.same("b", "after a new save") {
		t.Fatal("the newer copy was not used")
	}
}

// A copy the stream was compacted past is not used for one key: the
// catch-up would read the whole snapshot, every time, since nothing saves
// a config opened for one key.
func TestGetAfterACompactionSavesANewerCopy(t *testing.T) {
	e := newIndexEnv(t)
	w := e.open("writer")
	defer w.Close()
	if _, err := w.Put(e.ctx, "a", "0"); err != nil {
		t.Fatal(err)
	}
	e.save()
	if _, err := w.Put(e.ctx, "b", "1"); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	if c := e.oneKey("a"); c != nil {
		c.Close()
		t.Fatal("a copy the stream was compacted past was used for one key")
	}
	e.save()
	if !e.same("a", "after a new save") {
		t.Fatal("the newer copy was not used")
	}
}

// A copy the stream was compacted past is not decoded, by a get or any
// command: the snapshot the catch-up reads replaces it. The config is read
// from the server, and a newer copy saved.
func TestCopyCompactedPastIsNotLoaded(t *testing.T) {
	e := newIndexEnv(t)
	w := e.open("writer")
	defer w.Close()
	if _, err := w.Put(e.ctx, "a", "0"); err != nil {
		t.Fatal(err)
	}
	e.save()
	if _, err := w.Put(e.ctx, "b", "1"); err != nil {
		t.Fatal(err)
	}
	log := e.log()
	if r := e.flags.replicaFor(e.nc, log); r.load(log) == nil || r.revision == 0 {
		t.Fatal("a copy one entry behind, not compacted past, was not loaded")
	}
	if err := w.Compact(e.ctx); err != nil {
		t.Fatal(err)
	}
	log = e.log()
	r := e.flags.replicaFor(e.nc, log)
	if r.load(log) != nil || r.revision != 0 {
		t.Fatalf("a copy the stream was compacted past was loaded (revision %d)", r.revision)
	}
	c := e.open("reader")
	defer c.Close()
	r.save(c, time.Now().Add(time.Minute), nil)
	if _, rev, err := replicacache.Load(r.path, r.stamp); err != nil || rev != c.State().Revision() {
		t.Fatalf("after a read from the server: the cache file at %d, %v; want a newer copy, at %d", rev, err, c.State().Revision())
	}
}

// A cache file whose index is damaged (a CRC fails) is written again at
// the end of a get, even when the config did not move on, so that the next
// get finds its key from the index again.
func TestDamagedIndexIsWrittenAgain(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "put", "a", "1")
	e.run(0, "put", "b", "2")
	e.run(0, "get-all") // saves the copy and its index
	path := e.file("someConfig")
	data, _ := os.ReadFile(path)
	i := bytes.LastIndex(data, []byte("2")) // b's value, in the index's last record
	data[i] = '3'
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.run(0, "get", "b", "--raw"); out != "2" {
		t.Fatalf("get b --raw from a damaged index: %q, want 2", out)
	}
	_, rest, _ := bytes.Cut(mustRead(t, path), []byte("\n"))
	head, _, _ := bytes.Cut(rest, []byte("\n"))
	var stamp replicacache.Stamp
	if err := jsonUnmarshal(head, &stamp); err != nil {
		t.Fatal(err)
	}
	if got, err := replicacache.Peek(path, stamp, "b"); err != nil || got.Property.Value != "2" {
		t.Errorf("the index after the get: %+v, %v; want b's record, whole", got, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
