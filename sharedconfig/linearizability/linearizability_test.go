package linearizability_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
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
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The linearizability checks: clients on separate connections run random
// SharedConfig operations on a few keys while faults are injected, and
// porcupine checks the recorded history against a model of the operations.
// An operation that failed may or may not have taken effect: it is recorded
// as returning never, with an output the model accepts either way. So every
// acknowledged write must be seen by every later read, exactly once.
//
// SHAREDCONFIG_LINEARIZABILITY_OPS sets the operations per client (default
// 200); README's long run uses 2000.

var lzKeys = []string{"a", "b", "c"}

// lzState is the model's state: a value per key, or none.
type lzState [3]struct {
	v  string
	ok bool
}

type lzInput struct {
	op       string // get put putIfAbsent remove removeIfValue replace replaceIfValue replaceIfRevision clear
	key      int
	value    string // put's value, the new value of replace*, removeIfValue's expected
	expected string // replaceIfValue's expected value; replaceIfRevision's: the value its copy had at revision
	revision uint64 // replaceIfRevision's expected revision
}

type lzOutput struct {
	value   string
	ok      bool // found, existed, removed or replaced
	n       int  // clear: how many were removed
	found   bool // replaceIfRevision: the key had a value (then in value)
	unknown bool // failed: may or may not have taken effect
}

// count is how many keys s holds.
func (s lzState) count() int {
	n := 0
	for _, e := range s {
		if e.ok {
			n++
		}
	}
	return n
}

var lzModel = porcupine.Model{
	Init: func() interface{} { return lzState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(lzState), input.(lzInput), output.(lzOutput)
		cur := s[in.key]
		match := func(value string, ok bool) bool {
			return out.unknown || out.ok == ok && (!ok || out.value == value)
		}
		switch in.op {
		case "get":
			return match(cur.v, cur.ok), s
		case "put":
			ok := match(cur.v, cur.ok)
			s[in.key].v, s[in.key].ok = in.value, true
			return ok, s
		case "putIfAbsent":
			if cur.ok {
				return match(cur.v, true), s
			}
			s[in.key].v, s[in.key].ok = in.value, true
			return out.unknown || !out.ok, s
		case "remove":
			ok := match(cur.v, cur.ok)
			s[in.key].v, s[in.key].ok = "", false
			return ok, s
		case "removeIfValue":
			removed := cur.ok && cur.v == in.value
			if removed {
				s[in.key].v, s[in.key].ok = "", false
			}
			return out.unknown || out.ok == removed, s
		case "replace":
			ok := match(cur.v, cur.ok)
			if cur.ok {
				s[in.key].v = in.value
			}
			return ok, s
		case "replaceIfValue":
			replaced := cur.ok && cur.v == in.expected
			if replaced {
				s[in.key].v = in.value
			}
			return out.unknown || out.ok == replaced, s
		case "replaceIfRevision":
			// Every write writes a value no other write of the key
			// writes, so the key was last set at the revision the client
			// saw it at exactly when it still has the value it saw.
			replaced := cur.ok && cur.v == in.expected
			if replaced {
				s[in.key].v = in.value
			}
			return out.unknown || out.ok == replaced && out.found == cur.ok && out.value == cur.v, s
		case "clear":
			return out.unknown || out.n == s.count(), lzState{}
		}
		return false, s
	},
	Equal: func(a, b interface{}) bool { return a.(lzState) == b.(lzState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(lzInput), output.(lzOutput)
		res := fmt.Sprintf("%q %v", out.value, out.ok)
		if in.op == "clear" {
			res = fmt.Sprint(out.n)
		}
		if out.unknown {
			res = "unknown"
		}
		if in.op == "replaceIfRevision" {
			return fmt.Sprintf("%s(%s, %q, %d (%q)) -> %s", in.op, lzKeys[in.key], in.value, in.revision, in.expected, res)
		}
		return fmt.Sprintf("%s(%s, %q, %q) -> %s", in.op, lzKeys[in.key], in.value, in.expected, res)
	},
	DescribeState: func(state interface{}) string {
		var parts []string
		for i, e := range state.(lzState) {
			if e.ok {
				parts = append(parts, lzKeys[i]+"="+e.v)
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	},
}

// lzMix weighs the operations. Removes and clears are rare enough that a
// stale read is rarely explained away by one in flight.
var lzMix = []struct {
	op     string
	weight int
}{{"get", 25}, {"put", 30}, {"putIfAbsent", 10}, {"remove", 6}, {"removeIfValue", 6}, {"replace", 12}, {"replaceIfValue", 5}, {"replaceIfRevision", 4}, {"clear", 2}}

func lzPick(rng *rand.Rand) string {
	n := rng.IntN(100)
	for _, m := range lzMix {
		if n < m.weight {
			return m.op
		}
		n -= m.weight
	}
	return "get"
}

func lzOpsPerClient() int {
	if n, err := strconv.Atoi(os.Getenv("SHAREDCONFIG_LINEARIZABILITY_OPS")); err == nil && n > 0 {
		return n
	}
	return 200
}

// lzRun runs clients against a config named name on servers reached with
// connect, calls fault once a third of the operations are done, and checks
// the history.
func lzRun(t *testing.T, connect func() (*nats.Conn, error), name string, replicas int, fault func()) {
	const clients = 8
	perClient := lzOpsPerClient()
	var history []porcupine.Operation
	var mu sync.Mutex
	var done atomic.Int64
	var faultOnce sync.Once
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	var wg sync.WaitGroup
	for id := range clients {
		c := lzOpen(t, connect, name, replicas)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
			for n := range perClient {
				if done.Add(1) == int64(clients*perClient/3) && fault != nil {
					faultOnce.Do(func() { go fault() })
				}
				in := lzInputFor(rng, c, id, n, clients)
				// A pause, so that every client's operations spread over the
				// run (reads of a local copy would otherwise be over at once).
				time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
				call := now()
				out, err := lzDo(c, in)
				ret := now()
				switch {
				case errors.Is(err, statesync.ErrUnknownOutcome):
					out, ret = lzOutput{unknown: true}, math.MaxInt64
				case err != nil:
					// Any other failure is a promise that nothing was
					// written (a read observed nothing): the check holds
					// the program to it.
					continue
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	unknown := 0
	for _, op := range history {
		if op.Output.(lzOutput).unknown {
			unknown++
		}
	}
	t.Logf("%d operations, %d of them with an unknown outcome", len(history), unknown)
	lincheck.Check(t, lzModel, history)
}

// lzOpen opens the config named name on a connection of its own.
func lzOpen(t *testing.T, connect func() (*nats.Conn, error), name string, replicas int) *sharedconfig.Config {
	nc, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	l, err := jetstream.OpenLog(ctx, nc, "lz", name, jetstream.LogOptions{Replicas: replicas})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c, err := sharedconfig.Open(ctx, l, sharedconfig.Options{Compaction: true})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lzInputFor picks operation n of client id (of clients): client 0 only
// reads, client 1 mostly does; conditional operations expect values and
// revisions some client may really have written or c's copy shows.
func lzInputFor(rng *rand.Rand, c *sharedconfig.Config, id, n, clients int) lzInput {
	in := lzInput{op: lzPick(rng), key: rng.IntN(len(lzKeys))}
	if id == 0 || id == 1 && rng.IntN(10) < 7 {
		in.op = "get" // one client only reads and one mostly does, as many do
	}
	in.value = fmt.Sprintf("c%d-%d", id, n)
	if in.op == "removeIfValue" || in.op == "replaceIfValue" {
		// Expect a value some client may really have written.
		guess := fmt.Sprintf("c%d-%d", rng.IntN(clients), max(0, n-rng.IntN(4)))
		if in.op == "removeIfValue" {
			in.value = guess
		} else {
			in.expected = guess
		}
	}
	if in.op == "replaceIfRevision" {
		// Expect the revision the local copy has, which may be
		// stale; for a key it lacks, one no key is ever set at.
		in.revision, in.expected = 1, "(none)"
		if p, ok := c.State().Lookup(lzKeys[in.key]); ok {
			in.revision, in.expected = p.Revision, p.Value
		}
	}
	return in
}

func lzDo(c *sharedconfig.Config, in lzInput) (lzOutput, error) {
	// Long enough for a leader election: an operation that times out has
	// an unknown outcome, and many of those make the check slow.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k := lzKeys[in.key]
	var out lzOutput
	var r sharedconfig.WriteResult
	var err error
	switch in.op {
	case "get":
		if err = c.Refresh(ctx); err == nil {
			out.value, out.ok = c.Get(k)
		}
	case "put":
		r, err = c.Put(ctx, k, in.value)
		out.value, out.ok = r.Previous.Value, r.Existed
	case "putIfAbsent":
		r, err = c.Put(ctx, k, in.value, sharedconfig.IfAbsent())
		out.value, out.ok = r.Previous.Value, r.Existed
	case "remove":
		r, err = c.Remove(ctx, k)
		out.value, out.ok = r.Previous.Value, r.Existed
	case "removeIfValue":
		r, err = c.Remove(ctx, k, sharedconfig.IfValue(in.value))
		out.ok = r.Written
	case "replace":
		r, err = c.Replace(ctx, k, in.value)
		out.value, out.ok = r.Previous.Value, r.Existed
	case "replaceIfValue":
		r, err = c.Replace(ctx, k, in.value, sharedconfig.IfValue(in.expected))
		out.ok = r.Written
	case "replaceIfRevision":
		r, err = c.Replace(ctx, k, in.value, sharedconfig.IfRevision(in.revision))
		out.ok, out.value, out.found = r.Written, r.Previous.Value, r.Existed
	case "clear":
		out.n, err = c.Clear(ctx)
	}
	return out, err
}

func TestLinearizableOneServer(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	lzRun(t, func() (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	}, "one", 1, nil)
}

func TestLinearizableAcrossServerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := jstest.ServerAt(t, dir, "127.0.0.1:0")
	url := srv.ClientURL()
	restarted := make(chan struct{})
	lzRun(t, func() (*nats.Conn, error) { return localserver.Connect(localserver.ConnectOptions{URLs: url}) }, "restart", 1, func() {
		defer close(restarted)
		srv.Shutdown()
		time.Sleep(300 * time.Millisecond)
		jstest.ServerAt(t, dir, strings.TrimPrefix(url, "nats://"))
	})
	<-restarted
}

func TestLinearizableWithConnectionsCut(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := jstest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	cuts := make(chan struct{})
	lzRun(t, func() (*nats.Conn, error) {
		return localserver.Connect(localserver.ConnectOptions{URLs: p.URL()})
	}, "cut", 1, func() {
		defer close(cuts)
		for range 3 {
			p.Cut()
			time.Sleep(200 * time.Millisecond)
		}
	})
	<-cuts
}

// A 3-node cluster, the config's stream replicated 3 times, and its leader
// killed mid-run and brought back.
func TestLinearizableClusterLeaderKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	nodes := jstest.Cluster(t, 3)
	urls := jstest.URLs(nodes)
	connect := func() (*nats.Conn, error) { return localserver.Connect(localserver.ConnectOptions{URLs: urls}) }
	back := make(chan struct{})
	lzRun(t, connect, "cluster", 3, func() {
		defer close(back)
		nc, err := connect()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		l, err := jetstream.OpenLog(context.Background(), nc, "lz", "cluster", jetstream.LogOptions{Replicas: 3})
		if err != nil {
			t.Error(err)
			return
		}
		info, err := l.Stream().Info(context.Background())
		if err != nil || info.Cluster == nil {
			t.Errorf("stream info: %v", err)
			return
		}
		for _, n := range nodes {
			if n.Server.Name() == info.Cluster.Leader {
				t.Logf("killing the stream leader %s", info.Cluster.Leader)
				n.Server.Shutdown()
				time.Sleep(time.Second)
				n.Start(t)
				return
			}
		}
		t.Errorf("no node is the stream leader %q", info.Cluster.Leader)
	})
	<-back
}
