package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	scjs "github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// followCommits is how many commits the followers figure times (fewer if
// Options.Ops is smaller), in two halves per side.
const followCommits = 200

// followedKey is the key the followers figure's commits put.
const followedKey = "followed"

// followers: one config followed by Options.Followers connections, each
// watching it; the time from a commit to the last follower's callback,
// against as many raw ordered consumers, one per connection, each hearing
// a raw conditional publish. The sides run in halves, ours, raw, raw, ours.
func (r *runner) followers(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	f := max(r.o.Followers, 1)
	half := max(min(r.o.Ops, followCommits)/2, 1)
	name := uniqueName("followed")
	writer, err := r.open(ctx, name, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	nc, err := r.connect()
	if err != nil {
		return nil, err
	}
	var ours, raw []time.Duration
	for i, side := range []string{"ours", "raw", "raw", "ours"} {
		r.progress(fmt.Sprintf("%d followers", f), i, 4)
		var got []time.Duration
		if side == "ours" {
			got, err = r.watchedCommits(ctx, writer, name, f, half)
			ours = append(ours, got...)
		} else {
			got, err = r.consumedPublishes(ctx, nc, name, f, half)
			raw = append(raw, got...)
		}
		if err != nil {
			return nil, err
		}
	}
	anchor := fmt.Sprintf("%d raw ordered consumers", f)
	return []Row{
		row(fmt.Sprintf("commit to the last of %d followers, p50", f), "ms", percentile(ours, 0.50)/1000, percentile(raw, 0.50)/1000, anchor),
		row(fmt.Sprintf("commit to the last of %d followers, p99", f), "ms", percentile(ours, 0.99)/1000, percentile(raw, 0.99)/1000, anchor),
	}, nil
}

// arrivals counts, per commit, the followers that heard it, and says when
// the last one did.
type arrivals struct {
	followers int
	mu        sync.Mutex
	commits   map[uint64]*arrival
}

type arrival struct {
	heard int
	last  time.Time
	all   chan struct{}
}

func newArrivals(followers int) *arrivals {
	return &arrivals{followers: followers, commits: map[uint64]*arrival{}}
}

func (a *arrivals) of(commit uint64) *arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	x := a.commits[commit]
	if x == nil {
		x = &arrival{all: make(chan struct{})}
		a.commits[commit] = x
	}
	return x
}

// heard records that one follower heard commit.
func (a *arrivals) heard(commit uint64) {
	now := time.Now()
	x := a.of(commit)
	a.mu.Lock()
	defer a.mu.Unlock()
	x.heard++
	if x.heard == a.followers {
		x.last = now
		close(x.all)
	}
}

// wait returns when the last follower heard commit, timed from start.
func (a *arrivals) wait(ctx context.Context, commit uint64, start time.Time) (time.Duration, error) {
	x := a.of(commit)
	select {
	case <-x.all:
		a.mu.Lock()
		defer a.mu.Unlock()
		return x.last.Sub(start), nil
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("commit %d: %d of %d followers heard it in 30 s", commit, x.heard, a.followers)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// watchedCommits opens f followers of config name, each on its own
// connection and watching it, then times n PUTs by writer (after one
// untimed) to the last follower's callback.
func (r *runner) watchedCommits(ctx context.Context, writer *sharedconfig.Config, name string, f, n int) ([]time.Duration, error) {
	heard := newArrivals(f)
	closeAll, err := r.openFollowers(f, func(nc *nats.Conn) (func(), error) {
		c, err := openReplicated(ctx, nc, name, r.o.Replicas, sharedconfig.Options{})
		if err != nil {
			return nil, err
		}
		return c.Watch(followedKey, func(ch sharedconfig.Change) {
			for _, op := range ch.Ops {
				if i, err := strconv.ParseUint(op.Value, 10, 64); err == nil && op.Key == followedKey {
					heard.heard(i)
				}
			}
		}, nil)
	})
	if err != nil {
		return nil, err
	}
	defer closeAll()
	base := uint64(time.Now().UnixNano()) // values no earlier half used
	var took []time.Duration
	for i := range uint64(n + 1) {
		start := time.Now()
		if _, err := writer.Put(ctx, followedKey, strconv.FormatUint(base+i, 10)); err != nil {
			return nil, err
		}
		d, err := heard.wait(ctx, base+i, start)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			took = append(took, d)
		}
	}
	return took, nil
}

// consumedPublishes starts f raw ordered consumers of config name's stream,
// each on its own connection and delivering only new messages, then times
// n raw conditional publishes (after one untimed) to the last consumer's
// delivery.
func (r *runner) consumedPublishes(ctx context.Context, nc *nats.Conn, name string, f, n int) ([]time.Duration, error) {
	heard := newArrivals(f)
	closeAll, err := r.openFollowers(f, func(nc *nats.Conn) (func(), error) {
		stream, err := rawStreamOn(ctx, nc, name)
		if err != nil {
			return nil, err
		}
		cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
		if err != nil {
			return nil, err
		}
		sub, err := cons.Consume(func(msg jetstream.Msg) {
			if meta, err := msg.Metadata(); err == nil {
				heard.heard(meta.Sequence.Stream)
			}
		})
		if err != nil {
			return nil, err
		}
		return sub.Stop, nil
	})
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return timedPublishes(ctx, nc, name, n, heard)
}

// timedPublishes makes n+1 raw conditional publishes into config name and
// returns, for all but the first, the time to the last follower's delivery.
func timedPublishes(ctx context.Context, nc *nats.Conn, name string, n int, heard *arrivals) ([]time.Duration, error) {
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(ctx, scjs.StreamName(benchScope, name))
	if err != nil {
		return nil, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, err
	}
	last := info.State.LastSeq
	var took []time.Duration
	for i := range n + 1 {
		start := time.Now()
		entry := updateEntry(name, followedKey, "raw")
		if _, err := js.PublishMsg(ctx, entry, jetstream.WithExpectLastSequence(last)); err != nil {
			return nil, err
		}
		last++
		d, err := heard.wait(ctx, last, start)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			took = append(took, d)
		}
	}
	return took, nil
}

// openFollowers opens f connections and starts a follower on each with
// start, and returns what stops them all and closes the connections.
func (r *runner) openFollowers(f int, start func(nc *nats.Conn) (stop func(), err error)) (func(), error) {
	var conns []*nats.Conn
	var stops []func()
	closeAll := func() {
		for _, stop := range stops {
			stop()
		}
		for _, nc := range conns {
			nc.Close()
		}
	}
	for range f {
		nc, err := r.o.Connect()
		if err != nil {
			closeAll()
			return nil, err
		}
		conns = append(conns, nc)
		stop, err := start(nc)
		if err != nil {
			closeAll()
			return nil, err
		}
		stops = append(stops, stop)
	}
	return closeAll, nil
}

// rawStreamOn is config name's stream, seen through nats.go alone.
func rawStreamOn(ctx context.Context, nc *nats.Conn, name string) (jetstream.Stream, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return js.Stream(ctx, scjs.StreamName(benchScope, name))
}
