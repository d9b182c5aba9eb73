package sharedconfig_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Each benchmark runs its anchor and our operation alternately, on the same
// server in the same process, and reports both and their ratio, so the
// figures compare like with like whatever the machine.

func reportRatio(b *testing.B, ours, anchor time.Duration, oursName, anchorName string) {
	n := float64(b.N)
	b.ReportMetric(float64(ours.Nanoseconds())/n, oursName+"-ns/op")
	b.ReportMetric(float64(anchor.Nanoseconds())/n, anchorName+"-ns/op")
	b.ReportMetric(float64(ours)/float64(anchor), "ratio")
	b.ReportMetric(0, "ns/op") // the two figures above are the result
}

// rawStream is the anchor: a stream written with plain conditional publishes.
func rawStream(b *testing.B, nc *nats.Conn, name string) (natsjs.JetStream, string) {
	js, _ := natsjs.New(nc)
	subject := "raw." + name
	if _, err := js.CreateStream(context.Background(), natsjs.StreamConfig{Name: "RAW_" + name, Subjects: []string{subject}}); err != nil {
		b.Fatal(err)
	}
	return js, subject
}

// BenchmarkPut: an uncontended PUT against a raw JetStream publish with
// Nats-Expected-Last-Sequence, the floor for one durable conditional write.
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	srv := jstest.Server(b)
	nc := jstest.Connect(b, srv)
	c := openBench(b, nc, "put")
	js, subject := rawStream(b, nc, "put")
	payload := []byte(`{"ops":[{"op":"put","key":"key","value":"value"}]}`)
	var last uint64
	var ours, anchor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		ack, err := js.Publish(ctx, subject, payload, natsjs.WithExpectLastSequence(last))
		anchor += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		last = ack.Sequence
		start = time.Now()
		if _, _, err := c.Put(ctx, "key", "value"); err != nil {
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := fmt.Sprintf("key%06d", i%10)
		start := time.Now()
		if _, _, err := small.Put(ctx, key, "v"); err != nil {
			b.Fatal(err)
		}
		anchor += time.Since(start)
		start = time.Now()
		if _, _, err := large.Put(ctx, key, "v"); err != nil {
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
	l := writer.Log().(*jetstream.Log)
	// Write the entries with pipelined publishes: the setup is not measured.
	js, _ := natsjs.New(nc)
	for i := range pending {
		data, _ := sharedconfig.Codec{}.EncodeUpdates([]statesync.Update[sharedconfig.State]{sharedconfig.Put{Key: fmt.Sprint("key", i%100), Value: "value"}})
		msg := nats.NewMsg(jetstream.Subject("bench", "catchup"))
		msg.Header.Set(jetstream.HeaderFormat, jetstream.FormatVersion)
		msg.Header.Set(jetstream.HeaderKind, jetstream.KindUpdate)
		msg.Data = data
		if _, err := js.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 || i == pending-1 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("setup publishes did not complete")
			}
		}
	}
	last, err := l.LastRevision(ctx)
	if err != nil || last != pending+1 {
		b.Fatalf("stream at %d, %v; want %d", last, err, pending+1)
	}
	var ours, anchor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		consumer := readRaw(b, l.Stream(), last)
		anchor += time.Since(start)
		// The server keeps at most 1,000 consumers per stream.
		if err := l.Stream().DeleteConsumer(ctx, consumer); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		c, err := sharedconfig.Open(ctx, l, sharedconfig.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if c.Revision() != last {
			b.Fatalf("caught up to %d, want %d", c.Revision(), last)
		}
	}
	reportRatio(b, ours, anchor, "catch-up", "raw-ordered-consumer")
}

// readRaw reads up to last with an ordered consumer and returns its name.
func readRaw(b *testing.B, stream natsjs.Stream, last uint64) string {
	cons, err := stream.OrderedConsumer(context.Background(), natsjs.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	msgs, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer msgs.Stop()
	for {
		msg, err := msgs.Next()
		if err != nil {
			b.Fatal(err)
		}
		meta, _ := msg.Metadata()
		if meta.Sequence.Stream >= last {
			return cons.CachedInfo().Name
		}
	}
}

func openBench(b *testing.B, nc *nats.Conn, name string) *sharedconfig.Config {
	ctx := context.Background()
	l, err := jetstream.OpenLog(ctx, nc, "bench", name, jetstream.LogOptions{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := sharedconfig.Open(ctx, l, sharedconfig.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// openWithKeys opens a config holding n keys, written as one snapshot.
func openWithKeys(b *testing.B, nc *nats.Conn, name string, n int) *sharedconfig.Config {
	ctx := context.Background()
	c := openBench(b, nc, name)
	state := sharedconfig.EmptyState()
	for i := range n {
		state = sharedconfig.Put{Key: fmt.Sprintf("key%06d", i), Value: "value"}.Apply(state, 1)
	}
	data, err := sharedconfig.Codec{}.EncodeInitial(sharedconfig.Snapshot{State: state})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Log().Compact(ctx, c.Revision(), data); err != nil {
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
