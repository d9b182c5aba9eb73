// Package bench measures sharedconfig against its anchors in one run: each
// figure beside the primitive it is built on (a raw JetStream conditional
// publish, NATS KV compare-and-set, a raw ordered consumer, a request round
// trip), on the same server, as a ratio. "sharedconfig bench" prints them.
//
// Like hashicorp/raft's raftbench, which drives a store only through the
// LogStore interface, it drives sharedconfig only through its public API
// and the statesync.Log interface; the anchors use nats.go's public API.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	scjs "github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Options size the run.
type Options struct {
	// Connect opens a new connection to the server under test.
	Connect func() (*nats.Conn, error)
	// Ops is how many operations each latency measurement times.
	Ops int
	// Keys is the state size for the large-state and join figures.
	Keys int
	// Entries is how many pending entries catch-up reads.
	Entries int
	// Writers are the writer counts of the contended figures.
	Writers []int
	// Duration is how long each contended figure runs.
	Duration time.Duration
	// Combining opens every config of ours with sharedconfig's Combining.
	Combining bool
	// Replicas is the replication factor of every stream and KV bucket the
	// phases create; 0 means 1. Above 1 the server must be a cluster.
	Replicas int
	// Configs is how many configs the scale figure creates on one server;
	// Followers how many connections follow one config.
	Configs, Followers int
	// Progress, if set, hears what is being measured.
	Progress func(phase string, done, total int)
	// Process, if set, runs this program (sharedconfig) with args as a
	// process of its own on the server under test, with env added to its
	// environment, and waits for it to succeed: the one-shot figure times
	// whole processes. Without it, that figure is left out.
	Process func(ctx context.Context, env []string, args ...string) error
}

// DefaultOptions are the sizes the targets are set for, with enough
// operations per latency figure that the few which meet a garbage
// collection of the process (which hosts the server too) do not decide its
// p99, and enough time per contended figure that two identical sides agree
// (docs/performance.md says how far they move).
func DefaultOptions() Options {
	return Options{Ops: 8000, Keys: 100_000, Entries: 100_000, Writers: []int{1, 2, 4, 8, 16}, Duration: 4 * time.Second, Configs: 1000, Followers: 100}
}

// Row is one figure beside its anchor.
type Row struct {
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	Ours       float64 `json:"ours"`
	Anchor     float64 `json:"anchor"`
	AnchorName string  `json:"anchor_name"`
	// Ratio is Ours/Anchor; Target says which way is good.
	Ratio  float64 `json:"ratio"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	Note   string  `json:"note,omitempty"`
}

func row(name, unit string, ours, anchor float64, anchorName string) Row {
	r := Row{Name: name, Unit: unit, Ours: ours, Anchor: anchor, AnchorName: anchorName}
	if anchor != 0 {
		r.Ratio = ours / anchor
	}
	return r
}

// atMost and atLeast set a target on the ratio.
func (r Row) atMost(x float64) Row {
	met := r.Ratio <= x
	r.Target, r.Met = "≤ "+times(x), &met
	return r
}

func (r Row) atLeast(x float64) Row {
	met := r.Ratio >= x
	r.Target, r.Met = "≥ "+times(x), &met
	return r
}

// times writes a target as given, so ≤ 1.15× is not shown rounded to 1.1×.
func times(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s + "×"
}

// Phase is one measurement.
type Phase struct {
	Name string
	run  func(*runner, context.Context) ([]Row, error)
}

// Phases are the measurements, in the order Run takes them.
var Phases = []Phase{
	{"put", (*runner).putLatency},
	{"state-size", (*runner).stateSize},
	{"contended", (*runner).contended},
	{"shares", (*runner).shares},
	{"interjected", (*runner).interjected},
	{"leases", (*runner).leases},
	{"group commit", (*runner).groupCommit},
	{"refresh", (*runner).refresh},
	{"script", (*runner).script},
	{"catch-up", (*runner).catchUp},
	{"join", (*runner).join},
	{"get", (*runner).get},
	{"one-shot get", (*runner).oneShot},
	{"memory", (*runner).memory},
}

// ClusterPhases are the measurements of a run on a cluster (Options.Replicas
// above 1): what replication changes, each beside its anchor on streams and
// buckets of the same replication.
var ClusterPhases = []Phase{
	{"put", (*runner).putLatency},
	{"contended", (*runner).contended},
}

// Run measures everything, in order, and returns the rows.
func Run(ctx context.Context, o Options) ([]Row, error) { return RunPhases(ctx, Phases, o) }

// RunPhases takes the measurements of phases, in order, and returns the rows.
func RunPhases(ctx context.Context, phases []Phase, o Options) ([]Row, error) {
	var rows []Row
	for _, p := range phases {
		got, err := p.Run(ctx, o)
		rows = append(rows, got...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// Run takes the measurement. On replicated streams each figure's name says
// the replication ("R3 uncontended PUT, p50").
func (p Phase) Run(ctx context.Context, o Options) ([]Row, error) {
	rows, err := p.run(&runner{o: o}, ctx)
	if o.Replicas > 1 {
		for i := range rows {
			rows[i].Name = fmt.Sprintf("R%d %s", o.Replicas, rows[i].Name)
		}
	}
	return rows, err
}

type runner struct {
	o     Options
	conns []*nats.Conn
}

func (r *runner) progress(phase string, done, total int) {
	if r.o.Progress != nil {
		r.o.Progress(phase, done, total)
	}
}

func (r *runner) connect() (*nats.Conn, error) {
	nc, err := r.o.Connect()
	if err != nil {
		return nil, err
	}
	r.conns = append(r.conns, nc)
	return nc, nil
}

// closeAll closes the connections a phase opened.
func (r *runner) closeAll() {
	for _, nc := range r.conns {
		nc.Close()
	}
	r.conns = nil
}

// open opens a fresh config on its own connection.
func (r *runner) open(ctx context.Context, name string, o sharedconfig.Options) (*sharedconfig.Config, error) {
	o.Combining = o.Combining || r.o.Combining
	nc, err := r.connect()
	if err != nil {
		return nil, err
	}
	return openReplicated(ctx, nc, name, r.o.Replicas, o)
}

func openOn(ctx context.Context, nc *nats.Conn, name string, o sharedconfig.Options) (*sharedconfig.Config, error) {
	return openReplicated(ctx, nc, name, 1, o)
}

func openReplicated(ctx context.Context, nc *nats.Conn, name string, replicas int, o sharedconfig.Options) (*sharedconfig.Config, error) {
	l, err := scjs.OpenLog(ctx, nc, benchScope, name, scjs.LogOptions{Writer: benchWriter, Replicas: replicas})
	if err != nil {
		return nil, err
	}
	return sharedconfig.Open(ctx, l, o)
}

// benchScope is the scope of every config the bench opens, benchWriter
// the writer its entries name.
const benchScope, benchWriter = "bench", "bench"

// whilePlacing runs create again while a cluster says it has too few
// peers for the replicas asked (10005): a cluster that has just formed says
// so for a moment, as OpenLog knows.
func whilePlacing(ctx context.Context, create func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := create()
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != 10005 || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// uniqueName names one phase's config or stream. The whole NUID: its first
// characters are a prefix the process keeps, so a cut of them named every
// phase's config alike, and each contended figure started on the history
// of the one before.
func uniqueName(what string) string { return what + "_" + nuid.Next() }

func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds())
}

// putLatency: an uncontended PUT against a raw publish with
// Nats-Expected-Last-Sequence, alternately, on the config's own stream: the
// raw publish writes an entry as a PUT does (same subject and headers), so
// the two share one stream's leader, store and replication, and whatever
// the server does now and then to a stream (a replicated store stalls
// briefly at intervals) falls on both alike. Between the
// two, untimed, the config reads the raw entry, so that its PUT, too, is
// conditional on the latest revision and lands in one try.
//
// A second raw publish is timed apart from the first: the ratio of the two
// identical publishes (an A/A comparison) is how far this figure moves by
// chance on this machine, and the notes say it.
func (r *runner) putLatency(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	name := uniqueName("latency")
	c, err := r.open(ctx, name, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	nc, err := r.connect()
	if err != nil {
		return nil, err
	}
	publish := rawPublisher(ctx, nc, name)
	var ours, raw, again []time.Duration
	last := c.State().Revision()
	// Each round runs the three in a random order, so that none always
	// follows another (what came just before shifts a tail here).
	order, shuffle := []int{0, 1, 2}, rand.New(rand.NewPCG(1, 2))
	for i := range r.o.Ops {
		r.progress("uncontended PUT", i, r.o.Ops)
		shuffle.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, op := range order {
			// Each op follows the same untimed read, which ours needs
			// (its copy takes in the raw entries), so that all three start
			// alike.
			if err := c.Refresh(ctx); err != nil {
				return nil, err
			}
			if op < 2 {
				d, seq, err := publish(last)
				if err != nil {
					return nil, err
				}
				if op == 0 {
					raw = append(raw, d)
				} else {
					again = append(again, d)
				}
				last = seq
				continue
			}
			start := time.Now()
			if _, err := c.Put(ctx, "key", "value"); err != nil {
				return nil, err
			}
			ours = append(ours, time.Since(start))
			last = c.State().Revision()
		}
	}
	return putLatencyRows(ours, raw, again), nil
}

// rawPublisher returns a timed raw conditional publish of the entry a PUT
// of key=value writes, on the config's own subject: the PUT's anchor.
func rawPublisher(ctx context.Context, nc *nats.Conn, name string) func(last uint64) (time.Duration, uint64, error) {
	js, _ := jetstream.New(nc)
	entry := nats.NewMsg(scjs.Subject(benchScope, name))
	entry.Data = []byte(`{"ops":[{"op":"put","key":"key","value":"value"}]}`)
	entry.Header.Set(scjs.HeaderFormat, scjs.FormatVersion)
	entry.Header.Set(scjs.HeaderKind, scjs.KindUpdate)
	entry.Header.Set(scjs.HeaderWriter, benchWriter)
	return func(last uint64) (time.Duration, uint64, error) {
		start := time.Now()
		ack, err := js.PublishMsg(ctx, entry, jetstream.WithExpectLastSequence(last))
		if err != nil {
			return 0, 0, err
		}
		return time.Since(start), ack.Sequence, nil
	}
}

// putLatencyRows: the p50 and p99 rows, each noting its A/A ratio.
func putLatencyRows(ours, raw, again []time.Duration) []Row {
	anchor := "raw conditional publish"
	noise := func(p float64) string {
		return fmt.Sprintf("a second raw publish against the first, the same way: %.2f×", percentile(again, p)/percentile(raw, p))
	}
	p50 := row("uncontended PUT, p50", "µs", percentile(ours, 0.5), percentile(raw, 0.5), anchor).atMost(1.2)
	p99 := row("uncontended PUT, p99", "µs", percentile(ours, 0.99), percentile(raw, 0.99), anchor).atMost(1.2)
	p50.Note, p99.Note = noise(0.5), noise(0.99)
	return []Row{p50, p99}
}

// withKeys opens a config that holds n keys, written as one snapshot.
func (r *runner) withKeys(ctx context.Context, n int) (*sharedconfig.Config, error) {
	c, err := r.open(ctx, uniqueName("keys"), sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	if err := writeSnapshot(ctx, c, n); err != nil {
		return nil, err
	}
	return c, c.Refresh(ctx)
}

func key(i int) string { return fmt.Sprintf("key%07d", i) }

func stateOf(n int) sharedconfig.State {
	var s sharedconfig.State
	for i := range n {
		s = s.Set(key(i), "value-"+strconv.Itoa(i), 1)
	}
	return s
}

// writeSnapshot sets n keys in one import and compacts, so that c's log
// holds them as one snapshot, as a compacted config does (an import too
// large for one entry is a snapshot already, but one whose keys take its
// revision as they are read, which is not what a compaction writes).
func writeSnapshot(ctx context.Context, c *sharedconfig.Config, n int) error {
	props := make(map[string]string, n)
	for i := range n {
		props[key(i)] = "value-" + strconv.Itoa(i)
	}
	if _, err := c.Import(ctx, props, false); err != nil {
		return err
	}
	return c.Compact(ctx)
}

// stateSize: PUT latency with Keys keys in the state against 10.
func (r *runner) stateSize(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	r.progress("building states", 0, 1)
	small, err := r.withKeys(ctx, 10)
	if err != nil {
		return nil, err
	}
	large, err := r.withKeys(ctx, r.o.Keys)
	if err != nil {
		return nil, err
	}
	var s, l []time.Duration
	for i := range r.o.Ops {
		r.progress("PUT with a large state", i, r.o.Ops)
		k := key(i % 10)
		start := time.Now()
		if _, err := small.Put(ctx, k, "v"); err != nil {
			return nil, err
		}
		s = append(s, time.Since(start))
		start = time.Now()
		if _, err := large.Put(ctx, k, "v"); err != nil {
			return nil, err
		}
		l = append(l, time.Since(start))
	}
	return []Row{row(fmt.Sprintf("PUT with %d keys, p50", r.o.Keys), "µs", percentile(l, 0.5), percentile(s, 0.5), "PUT with 10 keys").atMost(1.1)}, nil
}

// contended: Writers writers, each on its own connection, all updating one
// key of one config for Duration, against NATS KV get-then-update on one key.
func (r *runner) contended(ctx context.Context) ([]Row, error) {
	var rows []Row
	for _, w := range r.o.Writers {
		r.progress(fmt.Sprintf("contended, %d writers", w), 0, 1)
		ours, kv, err := r.contendedBesideKV(ctx, w)
		if err != nil {
			return rows, err
		}
		x := row(fmt.Sprintf("contended, %d writers: commits/s", w), "commits/s", ours.rate(r.o.Duration), kv.rate(r.o.Duration), "NATS KV Update").atLeast(1.0)
		x.Note = fmt.Sprintf("tries per commit %.2f (KV %.2f); most tries for one commit %d (KV %d); %s (KV: %s)", ours.perCommit(), kv.perCommit(), ours.worst, kv.worst, ours.fairness(), kv.fairness())
		rows = append(rows, x)
		rows = append(rows, row(fmt.Sprintf("contended, %d writers: p99 commit latency", w), "µs", percentile(ours.latencies, 0.99), percentile(kv.latencies, 0.99), "NATS KV Update").atMost(1.0))
	}
	return rows, nil
}

// turnsEach is how many turns each side of the contended figure gets: the
// two alternate, so that a drift in the machine's speed (the disk's sync
// time moves by a fifth over seconds here) falls on both alike.
const turnsEach = 4

// alternate runs w writers of a and of b for Duration each, in turnsEach
// slices each, in the order a b b a a b b a: each side goes first in half
// the pairs. Strict alternation (a b a b) would put on the second side
// whatever comes once per pair of slices (the leases figure's ten processes
// read the log every second, a pair's length).
func (r *runner) alternate(ctx context.Context, w int, a, b func(i int) (int, error)) (ca, cb contention, err error) {
	slice := r.o.Duration / turnsEach
	for i := range 2 * turnsEach {
		aNext := i%4 == 0 || i%4 == 3
		write := b
		if aNext {
			write = a
		}
		c, err := r.runWriters(ctx, w, slice, write)
		if err != nil {
			return ca, cb, err
		}
		if aNext {
			ca = ca.add(c)
		} else {
			cb = cb.add(c)
		}
	}
	return ca, cb, nil
}

// contendedBesideKV runs w of our writers and w NATS KV writers, each set on
// connections of its own, in alternating slices that add up to Duration
// each (see alternate).
func (r *runner) contendedBesideKV(ctx context.Context, w int) (ours, kv contention, err error) {
	defer r.closeAll()
	oursWrite, err := r.openPutters(ctx, uniqueName("contended"), w)
	if err != nil {
		return ours, kv, err
	}
	kvWrite, cleanup, err := r.openKV(ctx, w)
	if err != nil {
		return ours, kv, err
	}
	defer cleanup()
	return r.alternate(ctx, w, oursWrite, kvWrite)
}

type contention struct {
	commits, tries int
	worst          int
	perWriter      []int           // commits by each writer
	latencies      []time.Duration // of every commit
}

// fairness says how the commits were shared out and how long the slowest
// took.
func (c contention) fairness() string {
	if len(c.perWriter) == 0 {
		return "no writers"
	}
	return fmt.Sprintf("commits per writer %d–%d, p99 %.0f µs", slices.Min(c.perWriter), slices.Max(c.perWriter), percentile(c.latencies, 0.99))
}

func (c contention) rate(d time.Duration) float64 { return float64(c.commits) / d.Seconds() }

// add is c and d together: the figures of two runs of the same writers.
func (c contention) add(d contention) contention {
	if c.perWriter == nil {
		c.perWriter = make([]int, len(d.perWriter))
	}
	for i, n := range d.perWriter {
		c.perWriter[i] += n
	}
	c.commits += d.commits
	c.tries += d.tries
	c.worst = max(c.worst, d.worst)
	c.latencies = append(c.latencies, d.latencies...)
	return c
}
func (c contention) perCommit() float64 {
	if c.commits == 0 {
		return 0
	}
	return float64(c.tries) / float64(c.commits)
}

// runWriters runs w writers until d passes; each write returns how many
// tries it took.
func (r *runner) runWriters(ctx context.Context, w int, d time.Duration, write func(i int) (int, error)) (contention, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	total := contention{perWriter: make([]int, w)}
	var firstErr error
	var wg sync.WaitGroup
	for i := range w {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				tries, err := write(i)
				took := time.Since(start)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						firstErr = cmp(firstErr, err)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				total.commits++
				total.tries += tries
				total.worst = max(total.worst, tries)
				total.perWriter[i]++
				total.latencies = append(total.latencies, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return total, firstErr
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (r *runner) contendedOurs(ctx context.Context, w int) (contention, error) {
	defer r.closeAll()
	return r.putters(ctx, uniqueName("contended"), w)
}

// putters runs w writers, each on a config of its own named name, putting
// one key as fast as they can, and counts the tries each commit took.
func (r *runner) putters(ctx context.Context, name string, w int) (contention, error) {
	write, err := r.openPutters(ctx, name, w)
	if err != nil {
		return contention{}, err
	}
	return r.runWriters(ctx, w, r.o.Duration, write)
}

// openPutters opens the configs of putters and returns the i'th writer's
// write, which says how many tries it took.
func (r *runner) openPutters(ctx context.Context, name string, w int) (func(i int) (int, error), error) {
	configs := make([]*sharedconfig.Config, w)
	tries := make([]atomic.Int64, w)
	for i := range w {
		var err error
		configs[i], err = r.open(ctx, name, sharedconfig.Options{Trace: func(a statesync.Attempt) {
			if a.Revision != 0 {
				tries[i].Store(int64(a.N))
			}
		}})
		if err != nil {
			return nil, err
		}
	}
	return func(i int) (int, error) {
		if _, err := configs[i].Put(ctx, "key", strconv.Itoa(i)); err != nil {
			return 0, err
		}
		return int(tries[i].Load()), nil
	}, nil
}

// openKV makes a NATS KV bucket and w writers on it, each on a connection
// of its own, and returns the i'th writer's compare-and-set increment,
// which says how many tries it took, and what deletes the bucket.
func (r *runner) openKV(ctx context.Context, w int) (write func(i int) (int, error), cleanup func(), err error) {
	bucket := "PERF_" + nuid.Next()
	kvs := make([]jetstream.KeyValue, w)
	var first *nats.Conn
	for i := range w {
		nc, err := r.connect()
		if err != nil {
			return nil, nil, err
		}
		js, _ := jetstream.New(nc)
		if i == 0 {
			first = nc
			var kv jetstream.KeyValue
			err := whilePlacing(ctx, func() (err error) {
				kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Replicas: r.o.Replicas})
				return err
			})
			if err != nil {
				return nil, nil, err
			}
			if _, err := kv.Put(ctx, "key", []byte("0")); err != nil {
				return nil, nil, err
			}
		}
		if kvs[i], err = js.KeyValue(ctx, bucket); err != nil {
			return nil, nil, err
		}
	}
	cleanup = func() {
		js, _ := jetstream.New(first)
		js.DeleteKeyValue(context.Background(), bucket)
	}
	return func(i int) (int, error) {
		for tries := 1; ; tries++ {
			e, err := kvs[i].Get(ctx, "key")
			if err != nil {
				return 0, err
			}
			_, err = kvs[i].Update(ctx, "key", []byte(strconv.Itoa(i)), e.Revision())
			if err == nil {
				return tries, nil
			}
			// ErrKeyExists matches only R1's error code; a replicated
			// stream answers a conflict with another (nats.go's doc).
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return 0, err
			}
		}
	}, cleanup, nil
}

// refresh: REFRESH with nothing pending against one request round trip.
func (r *runner) refresh(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	c, err := r.open(ctx, uniqueName("refresh"), sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	responder, err := r.connect()
	if err != nil {
		return nil, err
	}
	subject := "perf.echo." + nuid.Next()
	sub, err := responder.Subscribe(subject, func(m *nats.Msg) { m.Respond(nil) })
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	responder.Flush()
	requester, err := r.connect()
	if err != nil {
		return nil, err
	}
	var ours, rtt []time.Duration
	for i := range r.o.Ops {
		r.progress("REFRESH with nothing pending", i, r.o.Ops)
		start := time.Now()
		if _, err := requester.RequestWithContext(ctx, subject, nil); err != nil {
			return nil, err
		}
		rtt = append(rtt, time.Since(start))
		start = time.Now()
		if err := c.Refresh(ctx); err != nil {
			return nil, err
		}
		ours = append(ours, time.Since(start))
	}
	return []Row{row("REFRESH, nothing pending, p50", "µs", percentile(ours, 0.5), percentile(rtt, 0.5), "request round trip").atMost(1.5)}, nil
}

// appendEntries appends n update entries to log, unconditionally, from
// many appends in flight at once: setting up is not what is measured. They
// are ordinary entries, as any writer appends them, so the anchor that reads
// them raw reads what sharedconfig reads. progress hears of every round.
func appendEntries(ctx context.Context, log statesync.Log, n int, keyOf func(i int) string, progress func(done int)) error {
	const inFlight, round = 256, 2048
	for from := 0; from < n; from += round {
		to := min(from+round, n)
		var next atomic.Int64
		next.Store(int64(from))
		errs := make([]error, inFlight)
		var wg sync.WaitGroup
		for w := range inFlight {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < to && errs[w] == nil; i = int(next.Add(1) - 1) {
					errs[w] = appendPut(ctx, log, keyOf(i), "value-"+strconv.Itoa(i))
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		progress(to)
	}
	return nil
}

// putEntry is the body of an update entry that puts one key, as
// docs/wire.md gives it: written here, not taken from sharedconfig, so
// that the bench needs nothing but sharedconfig's public API and its wire
// format (TestBenchEntriesReadAsPuts checks that sharedconfig reads them).
type putEntry struct {
	Ops [1]struct {
		Op    string `json:"op"`
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"ops"`
}

func appendPut(ctx context.Context, log statesync.Log, key, value string) error {
	var e putEntry
	e.Ops[0].Op, e.Ops[0].Key, e.Ops[0].Value = "put", key, value
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = log.AppendAfter(ctx, statesync.Position{Revision: statesync.AnyRevision}, data)
	return err
}

// catchUp: a new client catching up on Entries pending entries against
// reading them with a raw ordered consumer.
func (r *runner) catchUp(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	name := uniqueName("catchup")
	c, err := r.open(ctx, name, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	fill := func(done int) { r.progress("writing pending entries", done, r.o.Entries) }
	if err := appendEntries(ctx, c.Log(), r.o.Entries, func(i int) string { return key(i % 1000) }, fill); err != nil {
		return nil, err
	}
	lastAt, err := c.Log().LastPosition(ctx)
	if err != nil {
		return nil, err
	}
	last := lastAt.Revision
	stream, err := r.rawStream(ctx, name)
	if err != nil {
		return nil, err
	}
	r.progress("catch-up", 0, 2)
	start := time.Now()
	consumer, err := readRaw(ctx, stream, last)
	if err != nil {
		return nil, err
	}
	raw := time.Since(start)
	stream.DeleteConsumer(ctx, consumer)
	r.progress("catch-up", 1, 2)
	start = time.Now()
	joined, err := r.open(ctx, name, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	ours := time.Since(start)
	if joined.State().Revision() != last {
		return nil, fmt.Errorf("caught up to %d, want %d", joined.State().Revision(), last)
	}
	return []Row{row(fmt.Sprintf("catch-up of %d entries", r.o.Entries), "ms", ms(ours), ms(raw), "raw ordered consumer").atMost(1.3)}, nil
}

// rawStream is the stream that holds config name, seen through nats.go
// alone, on a connection of its own.
func (r *runner) rawStream(ctx context.Context, name string) (jetstream.Stream, error) {
	nc, err := r.connect()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return js.Stream(ctx, scjs.StreamName(benchScope, name))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// readRaw reads up to last with an ordered consumer and returns its name.
func readRaw(ctx context.Context, stream jetstream.Stream, last uint64) (string, error) {
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return "", err
	}
	msgs, err := cons.Messages()
	if err != nil {
		return "", err
	}
	defer msgs.Stop()
	for {
		msg, err := msgs.Next(jetstream.NextContext(ctx))
		if err != nil {
			return "", err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return "", err
		}
		if meta.Sequence.Stream >= last {
			return cons.CachedInfo().Name, nil
		}
	}
}

// join: a new client joining a config of Keys keys after compaction,
// against joining one that holds the same keys as its whole history.
func (r *runner) join(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	compacted := uniqueName("compacted")
	c, err := r.open(ctx, compacted, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	r.progress("join: writing the snapshot", 0, 1)
	if err := writeSnapshot(ctx, c, r.o.Keys); err != nil {
		return nil, err
	}
	history := uniqueName("history")
	h, err := r.open(ctx, history, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	fill := func(done int) { r.progress("join: writing the history", done, r.o.Keys) }
	if err := appendEntries(ctx, h.Log(), r.o.Keys, key, fill); err != nil {
		return nil, err
	}
	r.progress("join", 0, 2)
	start := time.Now()
	a, err := r.open(ctx, compacted, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	afterCompaction := time.Since(start)
	r.progress("join", 1, 2)
	start = time.Now()
	b, err := r.open(ctx, history, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	wholeHistory := time.Since(start)
	if a.State().Len() != r.o.Keys || b.State().Len() != r.o.Keys {
		return nil, fmt.Errorf("joined with %d and %d keys, want %d", a.State().Len(), b.State().Len(), r.o.Keys)
	}
	x := row(fmt.Sprintf("join a config of %d keys, after compaction", r.o.Keys), "ms", ms(afterCompaction), ms(wholeHistory), fmt.Sprintf("join with %d entries of history", r.o.Keys)).atMost(1)
	return []Row{x}, nil
}

// get: GET does no I/O and allocates nothing.
func (r *runner) get(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	c, err := r.withKeys(ctx, r.o.Keys)
	if err != nil {
		return nil, err
	}
	k := key(r.o.Keys / 2)
	const n = 100_000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range n {
		if _, ok := c.Get(k); !ok {
			return nil, fmt.Errorf("GET %s found nothing", k)
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / n
	x := Row{Name: fmt.Sprintf("GET with %d keys", r.o.Keys), Unit: "ns", Ours: float64(elapsed.Nanoseconds()) / n, Note: fmt.Sprintf("%.2f allocations per GET, no I/O", allocs)}
	met := allocs < 0.01
	x.Target, x.Met = "0 allocations", &met
	return []Row{x}, nil
}

// memory: heap bytes per key at Keys keys against the raw bytes of the keys
// and values, the median of memorySamples weighings.
//
// Each weighing builds the state as PUTs do, one key at a time, and weighs
// the live heap with the state alive and again just after it is dropped,
// each after a full collection, not before it is built: the embedded server
// shares the process and frees the caches of earlier phases on its own
// schedule, so a weighing taken before the state is built can be the larger
// one. The median leaves out a weighing the server's own allocations moved;
// the note gives the spread.
func (r *runner) memory(context.Context) ([]Row, error) {
	var perKey []float64
	raw := 0
	for i := range memorySamples {
		r.progress("memory", i, memorySamples)
		s := stateOf(r.o.Keys)
		if raw == 0 {
			for k, p := range s.All() {
				raw += len(k) + len(p.Value)
			}
		}
		with := liveHeap()
		runtime.KeepAlive(s)
		perKey = append(perKey, (float64(with)-float64(liveHeap()))/float64(r.o.Keys))
	}
	slices.Sort(perKey)
	x := row(fmt.Sprintf("memory at %d keys", r.o.Keys), "bytes/key", perKey[len(perKey)/2], float64(raw)/float64(r.o.Keys), "raw bytes of keys and values").atMost(4)
	x.Note = fmt.Sprintf("median of %d weighings after a full GC, %.1f to %.1f", memorySamples, perKey[0], perKey[len(perKey)-1])
	return []Row{x}, nil
}

// memorySamples is how many weighings the memory figure takes (a var for
// the tests, which take fewer: see export_test.go).
var memorySamples = 5

// liveHeap is the heap the last full collection found live, just after one.
func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}
