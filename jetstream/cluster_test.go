package jetstream_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// clusterLog starts a 3-node cluster and opens a log replicated on all
// three, holding one entry.
func clusterLog(t *testing.T, name string) ([]*jstest.Node, *jetstream.Log) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	nodes := jstest.Cluster(t, 3)
	setup, err := localserver.Connect(localserver.ConnectOptions{URLs: jstest.URLs(nodes)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(setup.Close)
	l, err := jetstream.OpenLog(context.Background(), setup, "test", name, jetstream.LogOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := logtest.Append(l, context.Background(), 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	return nodes, l
}

// The reported bug (Issue 11): on a 3-node cluster, both followers killed
// while the leader runs, then restarted. A write made meanwhile must be
// reported as made, and made once; it was reported failed with 10158
// "duplicate message id is in process".
func TestWriteWhileFollowersRestart(t *testing.T) {
	t.Parallel()
	nodes, l := clusterLog(t, "followers")
	leader, followers := streamLeader(t, nodes, l)
	// The writer talks to the leader only, which keeps running.
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: leader.Server.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	w, err := jetstream.OpenLog(context.Background(), nc, "test", "followers", jetstream.LogOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int64
	retried := make(chan struct{})
	w.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			if tries.Add(1) == 2 {
				close(retried)
			}
			return publish(ctx, msg, opts...)
		}
	})
	for _, f := range followers {
		f.Server.Shutdown()
	}
	type result struct {
		rev uint64
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		rev, err := logtest.Append(w, ctx, 1, []byte("second"))
		done <- result{rev, err}
	}()
	// The first try got no answer (no quorum); restart the followers while
	// the write is retried.
	select {
	case <-retried:
	case r := <-done:
		t.Fatalf("the write ended before the followers came back: %d, %v", r.rev, r.err)
	}
	for _, f := range followers {
		f.Start(t)
	}
	r := <-done
	if r.err != nil || r.rev != 2 {
		t.Fatalf("Append while the followers restarted = %d, %v; want 2, nil (after %d tries)", r.rev, r.err, tries.Load())
	}
	t.Logf("landed after %d tries", tries.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last, err := logtest.LastRevision(w, ctx)
	if err != nil || last != 2 {
		t.Fatalf("stream at %d, %v; want 2: the write landed once", last, err)
	}
}

// streamLeader returns the node that leads l's stream, and the others.
func streamLeader(t *testing.T, nodes []*jstest.Node, l *jetstream.Log) (leader *jstest.Node, followers []*jstest.Node) {
	info, err := l.Stream().Info(context.Background())
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	for _, n := range nodes {
		if n.Server.Name() == info.Cluster.Leader {
			leader = n
		} else {
			followers = append(followers, n)
		}
	}
	if leader == nil {
		t.Fatalf("no node is the stream leader %q", info.Cluster.Leader)
	}
	return leader, followers
}

// A log opened while its stream has no leader (two of three nodes down)
// waits for the election, saying so, instead of failing: here the nodes come
// back while it waits.
func TestOpenWaitsForALeader(t *testing.T) {
	t.Parallel()
	nodes, l := clusterLog(t, "election")
	// The survivor is a follower: once the leader and the other follower
	// are down, nobody can answer for the stream until they are back.
	info, err := l.Stream().Info(context.Background())
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	var survivor *jstest.Node
	var stopped []*jstest.Node
	for _, n := range nodes {
		if survivor == nil && n.Server.Name() != info.Cluster.Leader {
			survivor = n
		} else {
			stopped = append(stopped, n)
		}
	}
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: survivor.Server.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, n := range stopped {
		n.Server.Shutdown()
	}
	waiting := make(chan string, 10)
	opened := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := jetstream.OpenLog(ctx, nc, "test", "election", jetstream.LogOptions{Replicas: 3, Waiting: func(reason string) { waiting <- reason }})
		if err == nil {
			var last uint64
			last, err = logtest.LastRevision(l, ctx)
			if err == nil && last != 1 {
				err = fmt.Errorf("last revision %d, want 1", last)
			}
		}
		opened <- err
	}()
	// The outage lasts until the open says it waits (or, if a server
	// answered from what it last knew, until the open is over or 5s pass).
	select {
	case reason := <-waiting:
		t.Logf("told: %s", reason)
	case err := <-opened:
		opened <- err
	case <-time.After(5 * time.Second):
	}
	for _, n := range stopped {
		n.Start(t)
	}
	if err := <-opened; err != nil {
		t.Fatalf("the open did not wait for the election: %v", err)
	}
}
