package sharedconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A lease outlives the loss of its stream's leader: on a 3-node cluster
// with the stream replicated 3 times, the leader is shut down while a
// holder keeps its lease alive and another process keeps leases too (so
// writes expiries); for twice the ttl after, the key is never removed.
// Deadlines are the timestamps stored in the log, which the new leader
// keeps; an election longer than the ttl is a silence, which gives grace.
func TestLeaseSurvivesLeaderFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	ctx := context.Background()
	nodes := jstest.Cluster(t, 3)
	urls := jstest.URLs(nodes)
	holder, log := openFailoverConfig(t, urls, "holder")
	other, _ := openFailoverConfig(t, urls, "other")
	const ttl = 3 * time.Second
	if _, err := holder.Leases().Register(ctx, "member", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Put(ctx, "/servers/1", "up", sharedconfig.WithLease("member")); err != nil {
		t.Fatal(err)
	}
	stopHolder := holder.Leases().Keep(func(msg string) { t.Log("holder:", msg) })
	defer stopHolder()
	stopOther := other.Leases().Keep(func(msg string) { t.Log("other:", msg) })
	defer stopOther()

	info, err := log.Stream().Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	var stopped *jstest.Node
	for _, n := range nodes {
		if n.Server.Name() == info.Cluster.Leader {
			stopped = n
		}
	}
	if stopped == nil {
		t.Fatalf("no node is the stream leader %q", info.Cluster.Leader)
	}
	t.Logf("shutting down the stream leader %s", info.Cluster.Leader)
	stopped.Server.Shutdown()
	time.Sleep(2 * ttl) // the scenario: the holder lives on through the failover

	opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for other.Refresh(opCtx) != nil && opCtx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	changes, err := other.History(opCtx, "/servers/1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if len(ch.Ops) == 1 && ch.Ops[0].Kind == "remove" {
			t.Fatalf("the key of a live holder was removed at revision %d, during the failover", ch.Revision)
		}
	}
	if _, ok := other.State().Lease("member"); !ok {
		t.Fatal("the lease ended during the failover")
	}
}

// openFailoverConfig opens the config of TestLeaseSurvivesLeaderFailover,
// replicated 3 times, on a connection of its own, for holder.
func openFailoverConfig(t *testing.T, urls, holder string) (*sharedconfig.Config, *jetstream.Log) {
	ctx := context.Background()
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	l, err := jetstream.OpenLog(ctx, nc, "failover", "leases", jetstream.LogOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sharedconfig.Open(ctx, l, sharedconfig.Options{Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	return c, l
}
