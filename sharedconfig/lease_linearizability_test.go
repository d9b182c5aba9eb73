package sharedconfig_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/lincheck"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The linearizability check of leases. 8 clients, each a Config on its own
// connection and the holder of the leases it registers, run random puts,
// gets, leased puts and lease registrations, refreshes, revocations and
// expiries on 3 keys and 8 leases with ttls of 1 to 2 s, so that leases
// lapse and end by expiry during the run. Now and then a client stalls for
// a ttl before refreshing its lease, or closes and reopens its Config (it
// reloads from snapshot and log); in one run the server stops for longer
// than every ttl, so that deadlines pass in silence, and the first thing
// each client does after the restart is expire another client's lease.
// porcupine checks the history against llModel, a sequential spec written
// here from README's rules, not from lease.go.
//
// Expiry depends on the server's clock, which a client does not know when
// it calls. So each operation's output says what the log said about it:
// the revision of the entry it appended and the server's timestamp on that
// entry, or, for one that appended nothing (a read, a decision not to
// write), the revision it read or decided at. The model applies an entry's
// lease rules at the entry's own time, exactly: a deadline is that time
// plus the ttl; a lease is watched once a lease entry lands in the second
// half of its life; an expiry entry past a watched deadline ends it with
// its keys, past an unwatched one (the log was silent) grants a fresh ttl;
// refreshes, re-registrations and leased puts do nothing to a lease that is
// past a watched deadline (and a leased put never renews one). Revisions also pin the order: an entry follows
// every entry and read of a lower revision, and a read at r follows every
// entry up to r, so a read that misses an acknowledged write is illegal.
//
// An operation whose outcome is unknown (its entry may or may not have
// landed) is looked up afterwards in the log, as the clients read it: each
// client writes under its own writer name and in program order, so the
// client's next entry that matches the operation, before its next
// acknowledged write (every append but a refresh is conditional on the
// revision the client last saw, so a late one cannot land after that
// write; for a refresh, which is not, the next matching entry at any later
// revision), is the operation's; the model then applies it at that entry's revision and time
// and accepts any result. An entry no operation accounts for fails the test.

var (
	llKeys   = []string{"a", "b", "c"}
	llLeases = []string{"L0", "L1", "L2", "L3", "L4", "L5", "L6", "L7"}
	llTTLs   = []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second}
)

const llClients = 8

type llLease struct {
	present  bool
	holder   int
	ttl      time.Duration
	deadline int64 // server time, Unix nanoseconds
	watched  bool
}

type llKey struct {
	v     string
	ok    bool
	lease string // the lease the key is attached to
}

// llState is the model's state: the keys, the leases, and the highest
// revision an operation linearized so far wrote or read at.
type llState struct {
	rev    uint64
	keys   [3]llKey
	leases [8]llLease
}

type llInput struct {
	op     string // get put putIfAbsent remove putWithLease register refresh revoke expire
	client int
	key    int
	lease  int
	value  string
	ttl    time.Duration // register
}

// llResult is what an operation returned.
type llResult struct {
	err      string // "", "unknown lease", "held", "expired"
	value    string // the value read, replaced or found
	ok       bool   // the key had a value; register: the lease existed (renewed)
	keyLease string // get: the key's lease
	lease    llLease
	keys     string // revoke: the keys removed
	ended    bool   // expire: the lease ended
}

type llOutput struct {
	unknown bool   // the call's outcome was unknown; the log says it landed
	wrote   bool   // it appended the entry at rev, stored at server time at
	rev     uint64 // the entry's revision, or the revision read or decided at
	at      int64  // Unix nanoseconds; set for entries that hold a lease operation
	res     llResult
}

func (l llLease) dead(at int64) bool { return at >= l.deadline && l.watched }

func (l llLease) renewed(at int64) llLease {
	l.deadline, l.watched = at+int64(l.ttl), false
	return l
}

// llTick: a lease entry at at watches every lease in the second half of
// its life.
func llTick(s llState, at int64) llState {
	for i, l := range s.leases {
		if l.present && !l.watched && at < l.deadline && at >= l.deadline-int64(l.ttl/2) {
			s.leases[i].watched = true
		}
	}
	return s
}

func llEnd(s llState, lease int) (llState, string) {
	var keys []string
	for i, k := range s.keys {
		if k.ok && k.lease == llLeases[lease] {
			keys = append(keys, llKeys[i])
			s.keys[i] = llKey{}
		}
	}
	s.leases[lease] = llLease{}
	return s, strings.Join(keys, ",")
}

// llSpec is the sequential spec: in state s, what in returns, whether it
// appends an entry, and the state after it, given the time the log stores
// that entry at. wrote is whether the operation did append one: a refresh
// is appended unconditionally when its client's copy showed the lease as
// its own, so it may land where the lease has ended or passed to another
// client; there it changes nothing and reports the lease ended (gone) or
// held (another client's).
func llSpec(s llState, in llInput, at int64, wrote bool) (llResult, bool, llState) {
	k := s.keys[in.key]
	if l := s.leases[in.lease]; in.op == "refresh" && wrote && !l.present {
		return llResult{err: "ended"}, true, llTick(s, at)
	} else if in.op == "refresh" && wrote && l.holder != in.client {
		return llResult{err: "held"}, true, llTick(s, at)
	}
	if res, wrote, next, ok := llKeySpec(s, in, k); ok {
		return res, wrote, next
	}
	l := s.leases[in.lease]
	switch {
	case in.op == "expire":
		if !l.present {
			return llResult{}, false, s
		}
		switch {
		case at < l.deadline:
		case l.watched:
			s, _ = llEnd(s, in.lease)
		default: // the log was silent when it fell due: grace
			s.leases[in.lease] = l.renewed(at)
		}
		s = llTick(s, at)
		return llResult{ended: !s.leases[in.lease].present}, true, s
	case l.present && l.holder != in.client:
		return llResult{err: "held"}, false, s
	case in.op == "register":
		res := llResult{ok: l.present}
		switch {
		case !l.present:
			s.leases[in.lease] = llLease{present: true, holder: in.client, ttl: in.ttl}.renewed(at)
		case l.dead(at):
			res = llResult{err: "expired"}
		default:
			l.ttl = in.ttl
			s.leases[in.lease] = l.renewed(at)
		}
		return res, true, llTick(s, at)
	case !l.present:
		return llResult{err: "unknown lease"}, false, s
	case in.op == "revoke":
		s, keys := llEnd(s, in.lease)
		return llResult{keys: keys}, true, llTick(s, at)
	case l.dead(at): // refresh, putWithLease: too late
		return llResult{err: "expired"}, true, llTick(s, at)
	case in.op == "refresh":
		s.leases[in.lease] = l.renewed(at)
		s = llTick(s, at)
		return llResult{lease: s.leases[in.lease]}, true, s
	case in.op == "putWithLease":
		s.keys[in.key] = llKey{v: in.value, ok: true, lease: llLeases[in.lease]}
		return llResult{value: k.v, ok: k.ok}, true, llTick(s, at)
	}
	panic("unknown operation " + in.op)
}

// llKeySpec is llSpec for the operations on keys alone; ok is false for
// the others.
func llKeySpec(s llState, in llInput, k llKey) (res llResult, wrote bool, next llState, ok bool) {
	switch in.op {
	case "get":
		return llResult{value: k.v, ok: k.ok, keyLease: k.lease, lease: s.leases[in.lease]}, false, s, true
	case "put":
		s.keys[in.key] = llKey{v: in.value, ok: true}
		return llResult{value: k.v, ok: k.ok}, true, s, true
	case "putIfAbsent":
		if k.ok {
			return llResult{value: k.v, ok: true}, false, s, true
		}
		s.keys[in.key] = llKey{v: in.value, ok: true}
		return llResult{}, true, s, true
	case "remove":
		if !k.ok {
			return llResult{}, false, s, true
		}
		s.keys[in.key] = llKey{}
		return llResult{value: k.v, ok: true}, true, s, true
	}
	return llResult{}, false, s, false
}

var llModel = porcupine.Model{
	Init: func() any { return llState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(llState), input.(llInput), output.(llOutput)
		res, wrote, next := llSpec(s, in, out.at, out.wrote)
		if wrote != out.wrote || out.rev < s.rev || wrote && out.rev == s.rev {
			return false, s
		}
		next.rev = out.rev
		return out.unknown || res == out.res, next
	},
	Equal: func(a, b any) bool { return a.(llState) == b.(llState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(llInput), output.(llOutput)
		args := llKeys[in.key]
		switch in.op {
		case "put", "putIfAbsent":
			args += ", " + in.value
		case "putWithLease":
			args += ", " + in.value + ", " + llLeases[in.lease]
		case "get":
			args += ", " + llLeases[in.lease]
		case "register":
			args = fmt.Sprintf("%s, %s", llLeases[in.lease], in.ttl)
		case "refresh", "revoke", "expire":
			args = llLeases[in.lease]
		}
		at := ""
		if out.wrote {
			at = fmt.Sprintf(" written at %d.%d, %s", llRev(out.rev), out.rev&(1<<llPartBits-1), time.Unix(0, out.at).Format("15:04:05.000"))
		} else {
			at = fmt.Sprintf(" at %d", llRev(out.rev))
		}
		res := fmt.Sprintf("%+v", out.res)
		if out.unknown {
			res = "unknown"
		}
		return fmt.Sprintf("c%d %s(%s)%s -> %s", in.client, in.op, args, at, res)
	},
	DescribeState: func(state any) string {
		s := state.(llState)
		parts := []string{fmt.Sprintf("rev %d", s.rev)}
		for i, k := range s.keys {
			if k.ok {
				parts = append(parts, fmt.Sprintf("%s=%s[%s]", llKeys[i], k.v, k.lease))
			}
		}
		for i, l := range s.leases {
			if l.present {
				parts = append(parts, fmt.Sprintf("%s: c%d %s until %s watched %v", llLeases[i], l.holder, l.ttl, time.Unix(0, l.deadline).Format("15:04:05.000"), l.watched))
			}
		}
		return strings.Join(parts, "; ")
	},
}

var llMix = []struct {
	op     string
	weight int
}{{"get", 28}, {"put", 10}, {"putIfAbsent", 6}, {"remove", 6}, {"putWithLease", 22}, {"register", 6}, {"refresh", 6}, {"revoke", 3}, {"expire", 13}}

func llPick(rng *rand.Rand) string {
	n := rng.IntN(100)
	for _, m := range llMix {
		if n < m.weight {
			return m.op
		}
		n -= m.weight
	}
	return "get"
}

// llEntry is one writer's part of an entry of the log, as a client read
// it: the entry's own operations, or a call another writer handed the
// entry's writer, which the entry carries after them (combining).
type llEntry struct {
	writer string
	at     int64
	ops    []sharedconfig.Op
}

// An operation's place in the log is a position: the revision of its
// entry, and its part's index there, for a write; for a read at a
// revision, after every part of that entry. The model orders operations
// by position.
const llPartBits = 5

func llWritePos(rev uint64, part int) uint64 { return rev<<llPartBits | uint64(part) }
func llReadPos(rev uint64) uint64            { return rev<<llPartBits | (1<<llPartBits - 1) }
func llRev(pos uint64) uint64                { return pos >> llPartBits }

// llParts splits an entry into its writers' parts, by position: each run
// of operations of one writer is a part, at the index of its first.
func llParts(ch sharedconfig.Change) map[uint64]llEntry {
	parts := map[uint64]llEntry{}
	start := 0
	for i := range ch.Ops {
		if i+1 < len(ch.Ops) && ch.Ops[i+1].HandedBy == ch.Ops[start].HandedBy {
			continue
		}
		e := llEntry{writer: cmp.Or(ch.Ops[start].HandedBy, ch.Writer), at: ch.Time.UnixNano()}
		for _, op := range ch.Ops[start : i+1] {
			op.HandedBy, op.Local = "", false // whose it is: the part's writer
			e.ops = append(e.ops, op)
		}
		parts[llWritePos(ch.Revision, start)] = e
		start = i + 1
	}
	return parts
}

// llLog gathers the entries every client reads from the log.
type llLog struct {
	t       *testing.T
	mu      sync.Mutex
	entries map[uint64]llEntry // by position
}

func (g *llLog) changed(ch sharedconfig.Change) {
	// A client's own plain writes are applied without being read back:
	// their time is the client's, so only readers record them.
	timed := slices.ContainsFunc(ch.Ops, func(op sharedconfig.Op) bool { return op.Lease != "" })
	if ch.Snapshot || ch.Foreign != "" || ch.Writer == "" || ch.Local && !timed {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for pos, e := range llParts(ch) {
		if old, ok := g.entries[pos]; ok && (old.writer != e.writer || old.at != e.at || !slices.Equal(old.ops, e.ops)) {
			g.t.Errorf("two clients read revision %d differently: %+v and %+v", ch.Revision, old, e)
		}
		g.entries[pos] = e
	}
}

// llClient is one client: a Config on its own connection.
type llClient struct {
	id      int
	nc      *nats.Conn
	c       *sharedconfig.Config
	attempt atomic.Pointer[statesync.Attempt] // the last try of the last write
}

func (cl *llClient) open(sh *llShared) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := sh.connect()
	if err != nil {
		return err
	}
	writer := fmt.Sprintf("c%d", cl.id)
	var c *sharedconfig.Config
	l, err := jetstream.OpenLog(ctx, nc, "ll", sh.name, jetstream.LogOptions{Writer: writer})
	if err == nil {
		c, err = sharedconfig.Open(ctx, l, sharedconfig.Options{
			Compaction: true,
			Combining:  sh.combining,
			Holder:     writer,
			Trace:      func(a statesync.Attempt) { cl.attempt.Store(&a) },
		})
	}
	if err == nil {
		// Following too: every client reads every entry soon after it lands.
		if _, err = c.Watch("", sh.log.changed, nil); err != nil {
			c.Close()
		}
	}
	if err != nil {
		nc.Close()
		return err
	}
	cl.close()
	cl.nc, cl.c = nc, c
	return nil
}

// close closes the client's connection and then its config, which stops
// its watch at once (a read under way fails with the connection).
func (cl *llClient) close() {
	if cl.c != nil {
		cl.nc.Close()
		cl.c.Close()
	}
}

// do runs in and says what it returned and what the log said of it. An
// error is a failure other than the answers of the lease operations.
func (cl *llClient) do(in llInput) (llOutput, error) {
	// Long enough for the server's restart: an operation that times out
	// has an unknown outcome.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, key, lease := cl.c, llKeys[in.key], llLeases[in.lease]
	cl.attempt.Store(nil)
	var out llOutput
	var err error
	switch in.op {
	case "get":
		if err = c.Refresh(ctx); err != nil {
			return out, err
		}
		st := c.State()
		p, _ := st.Lookup(key)
		out.res.value, out.res.ok = c.Get(key)
		out.res.keyLease = p.Lease
		l, ok := st.Lease(lease)
		out.res.lease = llLeaseOf(l, ok, sharedconfig.Watched(st, lease))
		out.rev = st.Revision()
		return out, nil
	case "put":
		out.res.value, out.res.ok, err = previous(c.Put(ctx, key, in.value))
	case "putIfAbsent":
		out.res.value, out.res.ok, err = previous(c.Put(ctx, key, in.value, sharedconfig.IfAbsent()))
	case "remove":
		out.res.value, out.res.ok, err = previous(c.Remove(ctx, key))
	case "putWithLease":
		out.res.value, out.res.ok, err = previous(c.Put(ctx, key, in.value, sharedconfig.WithLease(lease)))
	case "register":
		out.res.ok, err = c.Leases().Register(ctx, lease, in.ttl)
	case "refresh":
		l, rerr := c.Leases().Refresh(ctx, lease)
		if err = rerr; err == nil {
			out.res.lease = llLeaseOf(l, true, false) // a lease just renewed is not watched
		}
	case "revoke":
		var keys []string
		keys, err = c.Leases().Revoke(ctx, lease)
		out.res.keys = strings.Join(keys, ",")
	case "expire":
		out.res.ended, err = sharedconfig.ExpireNow(ctx, c, lease)
	}
	return cl.outcome(in, out, err)
}

// outcome adds to out what the log said of the operation: the answers of
// the lease operations that are errors become results, and the try that
// ended it says whether it wrote and at which revision.
func (cl *llClient) outcome(in llInput, out llOutput, err error) (llOutput, error) {
	for _, e := range []struct {
		err  error
		name string
	}{{lease.ErrUnknown, "unknown lease"}, {lease.ErrHeld, "held"}, {lease.ErrExpired, "expired"}, {lease.ErrEnded, "ended"}} {
		if errors.Is(err, e.err) {
			out.res, err = llResult{err: e.name}, nil
		}
	}
	if err != nil {
		return out, err
	}
	a := cl.attempt.Load()
	if a == nil {
		return out, fmt.Errorf("%s succeeded without a try", in.op)
	}
	out.wrote, out.rev = a.Updates > 0, a.Base
	if out.wrote {
		out.rev = a.Revision
	}
	return out, nil
}

func llLeaseOf(l lease.Lease, ok, watched bool) llLease {
	if !ok {
		return llLease{}
	}
	var holder int
	if _, err := fmt.Sscanf(l.Holder, "c%d", &holder); err != nil {
		holder = -1
	}
	return llLease{present: true, holder: holder, ttl: l.TTL, deadline: l.Deadline.UnixNano(), watched: watched}
}

// llInputFor picks an operation for cl. Lease i is mostly client i's: the
// lease operations mostly pick the client's own, the others some other
// client's (which it may not register or refresh); expiries pick any.
func llInputFor(rng *rand.Rand, cl *llClient, n int) llInput {
	in := llInput{op: llPick(rng), client: cl.id, key: rng.IntN(len(llKeys)), lease: cl.id}
	if in.op == "expire" || rng.IntN(10) < 3 {
		in.lease = rng.IntN(len(llLeases))
	}
	in.value = fmt.Sprintf("c%d-%d", cl.id, n)
	in.ttl = llTTLs[rng.IntN(len(llTTLs))]
	return in
}

// llRecord is one operation a client ran, in the client's order.
type llRecord struct {
	porcupine.Operation
	unknown bool
}

// llOpsPerClient is half of SHAREDCONFIG_LINEARIZABILITY_OPS (the
// operations per client of the runs in ./linearizability), 100 by default.
func llOpsPerClient() int {
	if n, err := strconv.Atoi(os.Getenv("SHAREDCONFIG_LINEARIZABILITY_OPS")); err == nil && n > 0 {
		return n / 2
	}
	return 100
}

// llRun runs the clients against a config named name, calls fault once a
// third of the operations are done, and checks the history.
func llRun(t *testing.T, connect func() (*nats.Conn, error), name string, fault func()) {
	llRunWith(t, &llShared{connect: connect, name: name, fault: fault})
}

// llRunWith is llRun with the clients' options in sh: sh.combining.
func llRunWith(t *testing.T, sh *llShared) {
	sh.t, sh.perClient, sh.log, sh.start = t, llOpsPerClient(), &llLog{t: t, entries: map[uint64]llEntry{}}, time.Now()
	records := make([][]llRecord, llClients)
	clients := make([]*llClient, llClients)
	var wg sync.WaitGroup
	for id := range llClients {
		cl := &llClient{id: id}
		if err := cl.open(sh); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.close)
		clients[id] = cl
		wg.Go(func() { records[id] = cl.run(sh) })
	}
	wg.Wait()
	for _, cl := range clients {
		cl.close() // their watches add no entry to the log's record after this
	}
	history, unknown := llHistory(t, sh.log, records)
	if sh.combining {
		carried := llCarried(sh.log)
		t.Logf("%d writes carried by other writers' entries", carried)
		if carried == 0 {
			t.Error("no write was carried by another writer's entry: the run checked no combining")
		}
	}
	t.Logf("%d operations over %s, %d with an unknown outcome; %s",
		len(history), time.Since(sh.start).Round(time.Millisecond), unknown, llStats(history))
	checked := time.Now()
	if !porcupine.CheckOperations(llModel, history) {
		llExplain(t, history)
	}
	lincheck.Check(t, llModel, history)
	t.Logf("checked in %s", time.Since(checked).Round(time.Millisecond))
}

// llShared is what the clients of a run share.
type llShared struct {
	combining bool // the clients hand their plain puts to the writer under way
	pauses    int  // the longest pause between a client's operations, in ms; 60 if 0
	puts      int  // the percentage of operations made plain puts, before the mix picks
	t         *testing.T
	connect   func() (*nats.Conn, error)
	name      string
	log       *llLog
	perClient int
	start     time.Time
	done      atomic.Int64 // operations begun
	fault     func()
	faultOnce sync.Once
	faultOver atomic.Bool
}

func (sh *llShared) now() int64 { return int64(time.Since(sh.start)) }

// run is one client's part: its operations, in its order.
func (cl *llClient) run(sh *llShared) []llRecord {
	var records []llRecord
	rng := rand.New(rand.NewPCG(uint64(cl.id), uint64(time.Now().UnixNano())))
	sawFault, failed := false, 0
	for n := range sh.perClient {
		if sh.done.Add(1) == int64(llClients*sh.perClient/3) && sh.fault != nil {
			sh.faultOnce.Do(func() {
				go func() {
					sh.fault()
					sh.faultOver.Store(true)
				}()
			})
		}
		if rng.IntN(100) == 0 {
			// Close and reopen: the new Config reads the leases back from
			// the snapshot and the log. While the server is down it
			// cannot: the client keeps its copy.
			if err := cl.open(sh); err != nil {
				sh.t.Logf("c%d did not reopen: %v", cl.id, err)
			}
		}
		in := llInputFor(rng, cl, n)
		if rng.IntN(100) < sh.puts {
			in.op = "put"
		}
		// A pause, so that the run lasts longer than the ttls; now and
		// then a long one, as a stalled process takes, after which the
		// client refreshes its lease, maybe too late.
		pause := time.Duration(rng.IntN(cmp.Or(sh.pauses, 60))) * time.Millisecond
		if rng.IntN(50) == 0 {
			pause = llTTLs[rng.IntN(len(llTTLs))]
			in.op, in.lease = "refresh", cl.id
		}
		if !sawFault && sh.faultOver.Load() {
			// The first thing after the fault: an expiry of the next
			// client's lease, which may race its holder's refresh. After
			// a silence it must grant grace.
			sawFault = true
			in.op, in.lease = "expire", (cl.id+1)%llClients
		}
		time.Sleep(pause)
		call := sh.now()
		out, err := cl.do(in)
		ret := sh.now()
		unknown := errors.Is(err, statesync.ErrUnknownOutcome)
		switch {
		case unknown:
			out, ret = llOutput{unknown: true}, math.MaxInt64
		case err != nil:
			if failed++; failed == 1 || failed%10 == 0 {
				sh.t.Logf("c%d: %d operations failed, this %s with %v", cl.id, failed, in.op, err)
			}
			continue // a promise that nothing was written
		}
		records = append(records, llRecord{porcupine.Operation{ClientId: cl.id, Input: in, Call: call, Output: out, Return: ret}, unknown})
	}
	return records
}

// llExplain replays history in the order of the revisions the log gave
// (the only order the model accepts, but for reads of one revision) and
// logs the first operation the model rejects, with the state before it.
func llExplain(t *testing.T, history []porcupine.Operation) {
	ops := slices.Clone(history)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int {
		oa, ob := a.Output.(llOutput), b.Output.(llOutput)
		if c := cmp.Compare(oa.rev, ob.rev); c != 0 {
			return c
		}
		if oa.wrote != ob.wrote {
			if oa.wrote {
				return -1
			}
			return 1
		}
		return 0
	})
	var s any = llState{}
	for _, op := range ops {
		ok, next := llModel.Step(s, op.Input, op.Output)
		if !ok {
			in, out := op.Input.(llInput), op.Output.(llOutput)
			want, wrote, _ := llSpec(s.(llState), in, out.at, out.wrote)
			t.Logf("in the log's order, the model rejects %s\nin state %s\n(the spec says: wrote %v, %+v)",
				llModel.DescribeOperation(op.Input, op.Output), llModel.DescribeState(s), wrote, want)
			return
		}
		s = next
	}
	t.Logf("in the log's order the model accepts every operation: the order breaks real time")
}

// llStats counts the lease operations' outcomes: expiries that ended a
// lease, and operations refused as too late.
func llStats(history []porcupine.Operation) string {
	ended, late := 0, map[string]int{}
	for _, op := range history {
		in, out := op.Input.(llInput), op.Output.(llOutput)
		if in.op == "expire" && out.res.ended {
			ended++
		}
		if out.res.err == "expired" {
			late[in.op]++
		}
	}
	return fmt.Sprintf("%d leases expired; late: %v", ended, late)
}

// llMatches: entry e is what in writes.
func llMatches(in llInput, e llEntry) bool {
	if len(e.ops) != 1 || e.writer != fmt.Sprintf("c%d", in.client) {
		return false
	}
	op := e.ops[0]
	key, lease := llKeys[in.key], llLeases[in.lease]
	switch in.op {
	case "put", "putIfAbsent":
		return op == sharedconfig.Op{Kind: "put", Key: key, Value: in.value}
	case "remove":
		return op == sharedconfig.Op{Kind: "remove", Key: key}
	case "putWithLease":
		return op == sharedconfig.Op{Kind: "put", Key: key, Value: in.value, Lease: lease}
	case "register":
		return op.Kind == "register_lease" && op.Lease == lease && op.TTL == in.ttl
	case "refresh":
		return op.Kind == "refresh_lease" && op.Lease == lease
	case "revoke":
		return op.Kind == "revoke_lease" && op.Lease == lease
	case "expire":
		return op.Kind == "expire_lease" && op.Lease == lease
	}
	return false
}

// llHistory gives every operation the log's word on it: the time of the
// entries it wrote, and for one whose outcome was unknown, the entry it
// landed at (or nothing: then it never landed, and is left out). An entry
// a client wrote that no operation accounts for fails the test.
func llHistory(t *testing.T, g *llLog, records [][]llRecord) ([]porcupine.Operation, int) {
	var history []porcupine.Operation
	unknown := 0
	for id, ops := range records {
		writer := fmt.Sprintf("c%d", id)
		llPlace(g, writer, ops)
		mine, used := g.written(writer), llAcknowledged(ops)
		low := uint64(0) // the revision the client's last known operation wrote or read at
		for i := range ops {
			r := &ops[i]
			out := r.Output.(llOutput)
			in := r.Input.(llInput)
			if r.unknown {
				unknown++
				high := llNextAcknowledged(in, ops[i+1:])
				for _, rev := range mine {
					if rev > low && rev < high && !used[rev] && llMatches(in, g.entries[rev]) {
						used[rev] = true
						out.wrote, out.rev = true, rev
						break
					}
				}
				if !out.wrote {
					continue // it never landed
				}
			} else {
				low = max(low, out.rev)
			}
			if out.wrote {
				e, seen := g.entries[out.rev]
				if seen && !llMatches(in, e) {
					t.Errorf("c%d's %s landed at revision %d, which holds %+v", id, in.op, llRev(out.rev), e)
				}
				if in.op != "put" && in.op != "putIfAbsent" && in.op != "remove" {
					if !seen {
						t.Errorf("no client read back entry %d, c%d's %s", llRev(out.rev), id, in.op)
					}
					out.at = e.at
				}
			}
			r.Output = out
			history = append(history, r.Operation)
		}
		for _, rev := range mine {
			if !used[rev] {
				t.Errorf("entry %d by %s (%+v) is no operation's", llRev(rev), writer, g.entries[rev])
			}
		}
	}
	slices.SortFunc(history, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return history, unknown
}

// llPlace turns the revisions the operations of writer were told they
// wrote or read at into positions: a write's is that of the part of its
// entry that is writer's and matches it (the first part if no client read
// the entry back), a read's after every part of its entry.
func llPlace(g *llLog, writer string, ops []llRecord) {
	for i := range ops {
		out, in := ops[i].Output.(llOutput), ops[i].Input.(llInput)
		if ops[i].unknown {
			continue
		}
		rev := out.rev
		out.rev = llReadPos(rev)
		if out.wrote {
			out.rev = llWritePos(rev, 0)
			for part := range 1<<llPartBits - 1 {
				if e, ok := g.entries[llWritePos(rev, part)]; ok && e.writer == writer && llMatches(in, e) {
					out.rev = llWritePos(rev, part)
					break
				}
			}
		}
		ops[i].Output = out
	}
}

// written returns the positions of the entries' parts writer wrote, oldest
// first.
func (g *llLog) written(writer string) []uint64 {
	var mine []uint64
	for rev, e := range g.entries {
		if e.writer == writer {
			mine = append(mine, rev)
		}
	}
	slices.Sort(mine)
	return mine
}

// llAcknowledged returns the entries the operations were told they wrote.
func llAcknowledged(ops []llRecord) map[uint64]bool {
	used := map[uint64]bool{}
	for _, r := range ops {
		if out := r.Output.(llOutput); !r.unknown && out.wrote {
			used[out.rev] = true
		}
	}
	return used
}

// llNextAcknowledged is the entry of the first operation in later that was
// told it wrote one: an operation in of unknown outcome landed before it.
// A refresh, appended unconditionally, may land after it.
func llNextAcknowledged(in llInput, later []llRecord) uint64 {
	if in.op == "refresh" {
		return math.MaxUint64
	}
	for _, r := range later {
		if out := r.Output.(llOutput); !r.unknown && out.wrote {
			return out.rev
		}
	}
	return math.MaxUint64
}

func TestLeasesLinearizableOneServer(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	llRun(t, func() (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}, "one", nil)
}

// The clients combine: a plain put may land in another client's entry,
// after its own operation, and the model takes it at its place there.
func TestLeasesLinearizableCombining(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	llRunWith(t, &llShared{combining: true, pauses: 1, puts: 70, name: "combining", connect: func() (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}})
}

// llCarried counts the parts of entries that are not their entry's
// writer's own.
func llCarried(g *llLog) int {
	n := 0
	for pos := range g.entries {
		if pos&(1<<llPartBits-1) != 0 {
			n++
		}
	}
	return n
}

// The server stops for longer than every ttl: deadlines pass while the log
// is silent, and the model holds the leases to the grace rule.
func TestLeasesLinearizableAcrossServerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := jstest.ServerAt(t, dir, "127.0.0.1:0")
	url := srv.ClientURL()
	restarted := make(chan struct{})
	llRun(t, func() (*nats.Conn, error) { return localserver.Connect(localserver.ConnectOptions{URLs: url}) }, "restart", func() {
		defer close(restarted)
		srv.Shutdown()
		time.Sleep(2500 * time.Millisecond) // longer than every ttl
		jstest.ServerAt(t, dir, strings.TrimPrefix(url, "nats://"))
	})
	<-restarted
}

// The check can fail: hand-made histories, each legal, and each broken in
// one operation in a way a wrong implementation of leases would break it.
func TestLeaseModelRejects(t *testing.T) {
	history := func(steps []lmStep) []porcupine.Operation {
		var ops []porcupine.Operation
		for i, s := range append(slices.Clone(lmStart), steps...) {
			ops = append(ops, porcupine.Operation{ClientId: s.in.client, Input: s.in, Output: s.out, Call: int64(2 * i), Return: int64(2*i + 1)})
		}
		return ops
	}
	for _, c := range append(lmLeaseCases(), lmOrderCases()...) {
		if !porcupine.CheckOperations(llModel, history(c.good)) {
			t.Errorf("%s: the legal history is rejected", c.name)
		}
		if porcupine.CheckOperations(llModel, history(c.bad)) {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// The hand-made histories of TestLeaseModelRejects: each case's steps follow
// lmStart.
type lmStep struct {
	in  llInput
	out llOutput
}

type lmCase struct {
	name      string
	good, bad []lmStep
}

var lmT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func lmMs(n int64) int64 { return lmT0 + n*int64(time.Millisecond) }

func lmWrote(rev uint64, at int64, res llResult) llOutput {
	return llOutput{wrote: true, rev: llWritePos(rev, 0), at: at, res: res}
}

func lmRead(rev uint64, res llResult) llOutput { return llOutput{rev: llReadPos(rev), res: res} }

func lmLease(deadline int64, watched bool) llLease {
	return llLease{present: true, holder: 0, ttl: time.Second, deadline: deadline, watched: watched}
}

var (
	lmRegister = llInput{op: "register", client: 0, lease: 0, ttl: time.Second}
	lmPutA     = llInput{op: "putWithLease", client: 0, key: 0, lease: 0, value: "v1"}
	lmExpire   = llInput{op: "expire", client: 1, lease: 0}
	lmGetA     = llInput{op: "get", client: 1, key: 0, lease: 0}
	lmRefresh  = llInput{op: "refresh", client: 0, lease: 0}
)

// c0 registers L0 with a ttl of 1s and puts a under it; an early expiry at
// 600ms witnesses the second half of its life (it is watched).
var lmStart = []lmStep{
	{lmRegister, lmWrote(1, lmMs(0), llResult{})},
	{lmPutA, lmWrote(2, lmMs(100), llResult{})},
	{lmExpire, lmWrote(3, lmMs(600), llResult{})},
	{lmGetA, lmRead(3, llResult{value: "v1", ok: true, keyLease: "L0", lease: lmLease(lmMs(1000), true)})},
}

// lmLeaseCases: expiry, and refreshes that come late.
func lmLeaseCases() []lmCase {
	return []lmCase{{
		name: "a key read after its lease expired",
		good: []lmStep{
			{lmExpire, lmWrote(4, lmMs(1200), llResult{ended: true})},
			{lmGetA, lmRead(4, llResult{})},
		},
		bad: []lmStep{
			{lmExpire, lmWrote(4, lmMs(1200), llResult{ended: true})},
			{lmGetA, lmRead(4, llResult{value: "v1", ok: true, keyLease: "L0"})},
		},
	}, {
		name: "a refresh past a watched deadline revives the lease",
		good: []lmStep{
			{lmRefresh, lmWrote(4, lmMs(1100), llResult{err: "expired"})},
			{lmExpire, lmWrote(5, lmMs(1200), llResult{ended: true})},
		},
		bad: []lmStep{
			{lmRefresh, lmWrote(4, lmMs(1100), llResult{lease: lmLease(lmMs(2100), false)})},
			{lmExpire, lmWrote(5, lmMs(1200), llResult{})},
		},
	}, {
		name: "a refresh reported late whose renewal readers see",
		good: []lmStep{
			{lmRefresh, lmWrote(4, lmMs(1100), llResult{err: "expired"})},
			{lmGetA, lmRead(4, llResult{value: "v1", ok: true, keyLease: "L0", lease: lmLease(lmMs(1000), true)})},
		},
		bad: []lmStep{
			{lmRefresh, lmWrote(4, lmMs(1100), llResult{err: "expired"})},
			{lmGetA, lmRead(4, llResult{value: "v1", ok: true, keyLease: "L0", lease: lmLease(lmMs(2100), false)})},
		},
	}, {
		name: "an unconditional refresh after the lease ended revives it",
		good: []lmStep{
			{lmExpire, lmWrote(4, lmMs(1200), llResult{ended: true})},
			{lmRefresh, lmWrote(5, lmMs(1300), llResult{err: "ended"})},
			{lmGetA, lmRead(5, llResult{})},
		},
		bad: []lmStep{
			{lmExpire, lmWrote(4, lmMs(1200), llResult{ended: true})},
			{lmRefresh, lmWrote(5, lmMs(1300), llResult{lease: lmLease(lmMs(2300), false)})},
			{lmGetA, lmRead(5, llResult{lease: lmLease(lmMs(2300), false)})},
		},
	}}
}

// lmOrderCases: lost writes, stale reads, and the grace after a silence.
func lmOrderCases() []lmCase {
	return []lmCase{{
		name: "a put lost",
		good: []lmStep{
			{llInput{op: "put", client: 2, key: 1, value: "x"}, lmWrote(4, 0, llResult{})},
			{llInput{op: "get", client: 1, key: 1, lease: 1}, lmRead(4, llResult{value: "x", ok: true})},
		},
		bad: []lmStep{
			{llInput{op: "put", client: 2, key: 1, value: "x"}, lmWrote(4, 0, llResult{})},
			{llInput{op: "get", client: 1, key: 1, lease: 1}, lmRead(4, llResult{})},
		},
	}, {
		name: "a read at a revision older than a write it follows",
		good: []lmStep{
			{llInput{op: "put", client: 2, key: 1, value: "x"}, lmWrote(4, 0, llResult{})},
			{llInput{op: "get", client: 1, key: 1, lease: 1}, lmRead(4, llResult{value: "x", ok: true})},
		},
		bad: []lmStep{
			{llInput{op: "put", client: 2, key: 1, value: "x"}, lmWrote(4, 0, llResult{})},
			{llInput{op: "get", client: 1, key: 1, lease: 1}, lmRead(3, llResult{})},
		},
	}, {
		// After a silence (no lease entry in the second half of the
		// lease's life) the first entry grants a fresh ttl.
		name: "a lease ended after the log was silent",
		good: []lmStep{
			{lmRegister, lmWrote(4, lmMs(2000), llResult{err: "expired"})}, // dead since 1000
			{lmExpire, lmWrote(5, lmMs(2100), llResult{ended: true})},
			{lmRegister, lmWrote(6, lmMs(2200), llResult{})},
			{lmExpire, lmWrote(7, lmMs(9000), llResult{})}, // silent since 2200: grace
			{lmGetA, lmRead(7, llResult{lease: lmLease(lmMs(10000), false)})},
		},
		bad: []lmStep{
			{lmRegister, lmWrote(4, lmMs(2000), llResult{err: "expired"})},
			{lmExpire, lmWrote(5, lmMs(2100), llResult{ended: true})},
			{lmRegister, lmWrote(6, lmMs(2200), llResult{})},
			{lmExpire, lmWrote(7, lmMs(9000), llResult{ended: true})},
			{lmGetA, lmRead(7, llResult{})},
		},
	}}
}
