package bench

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	scjs "github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// On a cluster the raw stream's leader moves to the node that leads the
// other stream, wherever each was placed.
func TestColocateMovesTheLeader(t *testing.T) {
	ctx := context.Background()
	nc, err := scjs.Connect(scjs.ConnectOptions{URLs: jstest.URLs(jstest.Cluster(t, 3))})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, name := range []string{"A", "B", "C", "D"} {
		if err := whilePlacing(ctx, func() error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, raw := range []string{"B", "C", "D"} {
		if err := colocate(ctx, js, nc, raw, "A"); err != nil {
			t.Fatal(err)
		}
		a, _ := js.Stream(ctx, "A")
		b, _ := js.Stream(ctx, raw)
		if la, lb := a.CachedInfo().Cluster.Leader, b.CachedInfo().Cluster.Leader; la != lb {
			t.Fatalf("leaders %s and %s", la, lb)
		}
	}
}
