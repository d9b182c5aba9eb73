package bench

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// The classic benchmarks time three of the comparisons per iteration. Each
// runs its anchor and our operation alternately, on the same server in the
// same process, and reports both and their ratio, so the figures compare
// like with like whatever the machine.

func reportRatio(b *testing.B, ours, anchor time.Duration, oursName, anchorName string) {
	n := float64(b.N)
	b.ReportMetric(float64(ours.Nanoseconds())/n, oursName+"-ns/op")
	b.ReportMetric(float64(anchor.Nanoseconds())/n, anchorName+"-ns/op")
	b.ReportMetric(float64(ours)/float64(anchor), "ratio")
	b.ReportMetric(0, "ns/op") // the two figures above are the result
}

// BenchmarkPut: an uncontended PUT against a raw JetStream publish with
// Nats-Expected-Last-Sequence, the floor for one durable conditional write.
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	srv := jstest.Server(b)
	nc := jstest.Connect(b, srv)
	c := openBench(b, nc, "put")
	js, _ := natsjs.New(nc)
	subject := "raw.put"
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "RAW_put", Subjects: []string{subject}}); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"ops":[{"op":"put","key":"key","value":"value"}]}`)
	var last uint64
	var ours, anchor time.Duration
	for b.Loop() {
		start := time.Now()
		ack, err := js.Publish(ctx, subject, payload, natsjs.WithExpectLastSequence(last))
		anchor += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		last = ack.Sequence
		start = time.Now()
		if _, err := c.Put(ctx, "key", "value"); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
	}
	reportRatio(b, ours, anchor, "put", "raw-publish")
}

// BenchmarkPutStateSize: a PUT with 100,000 keys in the state against a PUT
// with 10: applying an update must not cost more as the state grows.
func BenchmarkPutStateSize(b *testing.B) {
	ctx := context.Background()
	srv := jstest.Server(b)
	nc := jstest.Connect(b, srv)
	small := openWithKeys(b, nc, "small", 10)
	large := openWithKeys(b, nc, "large", 100_000)
	var ours, anchor time.Duration
	i := 0
	for b.Loop() {
		k := key(i % 10)
		i++
		start := time.Now()
		if _, err := small.Put(ctx, k, "v"); err != nil {
			b.Fatal(err)
		}
		anchor += time.Since(start)
		start = time.Now()
		if _, err := large.Put(ctx, k, "v"); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
	}
	reportRatio(b, ours, anchor, "put-100k-keys", "put-10-keys")
}

// BenchmarkCatchUp: a new client catching up on 10,000 pending entries
// against reading the same entries with a raw ordered consumer.
func BenchmarkCatchUp(b *testing.B) {
	const pending = 10_000
	ctx := context.Background()
	srv := jstest.Server(b)
	nc := jstest.Connect(b, srv)
	writer := openBench(b, nc, "catchup")
	l := writer.Log()
	if err := appendEntries(ctx, l, pending, func(i int) string { return key(i % 100) }, func(int) {}); err != nil {
		b.Fatal(err)
	}
	last, err := logtest.LastRevision(l, ctx)
	if err != nil || last != pending+1 {
		b.Fatalf("stream at %d, %v; want %d", last, err, pending+1)
	}
	js, _ := natsjs.New(nc)
	stream, err := js.Stream(ctx, jetstream.StreamName(benchScope, "catchup"))
	if err != nil {
		b.Fatal(err)
	}
	var ours, anchor time.Duration
	for b.Loop() {
		start := time.Now()
		consumer, err := readRaw(ctx, stream, last)
		anchor += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		// The server keeps at most 1,000 consumers per stream.
		if err := stream.DeleteConsumer(ctx, consumer); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		c, err := sharedconfig.Open(ctx, l, sharedconfig.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if c.State().Revision() != last {
			b.Fatalf("caught up to %d, want %d", c.State().Revision(), last)
		}
	}
	reportRatio(b, ours, anchor, "catch-up", "raw-ordered-consumer")
}

func openBench(b *testing.B, nc *nats.Conn, name string) *sharedconfig.Config {
	c, err := openOn(context.Background(), nc, name, sharedconfig.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// openWithKeys opens a config holding n keys, written as one snapshot.
func openWithKeys(b *testing.B, nc *nats.Conn, name string, n int) *sharedconfig.Config {
	ctx := context.Background()
	c := openBench(b, nc, name)
	if err := writeSnapshot(ctx, c, n); err != nil {
		b.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	if c.State().Len() != n {
		b.Fatalf("config holds %d keys, want %d", c.State().Len(), n)
	}
	return c
}
