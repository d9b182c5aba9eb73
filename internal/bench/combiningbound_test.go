package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// BenchmarkCombiningBound measures what combining can give at best on this
// machine (docs/performance.md, "What was tried"): one writer appends in a
// loop, taking into each entry the puts the other writers handed it by
// request, and answers each with the entry's revision; each of those reads
// the entries up to it with one batched get and finds its put there. It
// has none of what a real form needs (exactly once, results checked by the
// hander's own function, turns), so it is a bound, beside NATS KV's
// get-then-update loops on the same server.
func BenchmarkCombiningBound(b *testing.B) {
	for _, w := range []int{2, 4, 8, 16} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			srv := jstest.Server(b)
			const d = time.Second
			var bound, kv []time.Duration
			for range b.N {
				bound = append(bound, combinedLoops(b, srv, w, d)...)
				kv = append(kv, kvLoops(b, srv, w, d)...)
			}
			secs := float64(b.N) * d.Seconds()
			b.ReportMetric(float64(len(bound))/secs, "bound-commits/s")
			b.ReportMetric(float64(len(kv))/secs, "kv-commits/s")
			b.ReportMetric(float64(len(bound))/float64(len(kv)), "ratio")
			b.ReportMetric(p99ms(bound), "bound-p99-ms")
			b.ReportMetric(p99ms(kv), "kv-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func p99ms(lat []time.Duration) float64 {
	slices.Sort(lat)
	return float64(lat[len(lat)*99/100]) / float64(time.Millisecond)
}

type boundOp struct {
	Op    string `json:"op"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

func boundEntry(ops []boundOp) []byte {
	data, _ := json.Marshal(map[string][]boundOp{"ops": ops})
	return data
}

// combinedLoops runs one holder and w-1 handers for d and returns every
// commit's latency (the holder's: its append; a hander's: its request and
// its read).
func combinedLoops(b *testing.B, srv *localserver.Server, w int, d time.Duration) []time.Duration {
	ctx := context.Background()
	name := uniqueName("bound")
	nc := jstest.Connect(b, srv)
	holder, err := jetstream.OpenLog(ctx, nc, benchScope, name, jetstream.LogOptions{})
	if err != nil {
		b.Fatal(err)
	}
	subject := "bound.hand." + name
	handed := make(chan *nats.Msg, 1024)
	sub, err := nc.ChanSubscribe(subject, handed)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	took := func(since time.Time) {
		mu.Lock()
		lat = append(lat, time.Since(since))
		mu.Unlock()
	}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	wg.Go(func() { holdLoop(b, holder, handed, stop, took) })
	for h := 1; h < w; h++ {
		wg.Go(func() { handLoop(b, srv, name, subject, h, stop, took) })
	}
	wg.Wait()
	return lat
}

// holdLoop appends until stop, each entry with its own put and up to 15
// handed ones, and answers their handers with its revision; then it
// answers the handers left with 0.
func holdLoop(b *testing.B, l *jetstream.Log, handed chan *nats.Msg, stop time.Time, took func(time.Time)) {
	ctx := context.Background()
	var at statesync.Position
	for i := 0; time.Now().Before(stop); i++ {
		start := time.Now()
		ops := []boundOp{{"put", "holder", strconv.Itoa(i)}}
		var hands []*nats.Msg
	drain:
		for len(hands) < 15 {
			select {
			case m := <-handed:
				ops, hands = append(ops, boundOp{"put", string(m.Data), "v"}), append(hands, m)
			default:
				break drain
			}
		}
		next, err := l.AppendAfter(ctx, at, boundEntry(ops))
		if err != nil {
			b.Error(err)
			break
		}
		at = next
		for _, m := range hands {
			_ = m.Respond([]byte(strconv.FormatUint(at.Revision, 10)))
		}
		took(start)
	}
	for {
		select {
		case m := <-handed:
			_ = m.Respond([]byte("0"))
		case <-time.After(100 * time.Millisecond):
			return
		}
	}
}

// handLoop hands puts to the holder until stop, reading each time the
// entries up to the revision it answers and finding the put there.
func handLoop(b *testing.B, srv *localserver.Server, name, subject string, h int, stop time.Time, took func(time.Time)) {
	ctx := context.Background()
	nc := jstest.Connect(b, srv)
	l, err := jetstream.OpenLog(ctx, nc, benchScope, name, jetstream.LogOptions{})
	if err != nil {
		b.Error(err)
		return
	}
	var at statesync.Position
	for k := 0; time.Now().Before(stop); k++ {
		start := time.Now()
		key := fmt.Sprintf("h%d-%d", h, k)
		m, err := nc.Request(subject, []byte(key), 5*time.Second)
		if err != nil {
			b.Error(err)
			return
		}
		rev, _ := strconv.ParseUint(string(m.Data), 10, 64)
		if rev == 0 {
			return // the holder stopped
		}
		found := false
		err = l.ReadAfter(ctx, at, rev, func(e statesync.Entry) error {
			at = e.Position
			found = found || e.Revision == rev && strings.Contains(string(e.Data), `"`+key+`"`)
			return nil
		})
		if err != nil || !found {
			b.Errorf("put %s at revision %d: found %v, %v", key, rev, found, err)
			return
		}
		took(start)
	}
}

// kvLoops runs w NATS KV get-then-update loops on one key for d and
// returns every update's latency, its lost tries included.
func kvLoops(b *testing.B, srv *localserver.Server, w int, d time.Duration) []time.Duration {
	ctx := context.Background()
	bucket := strings.ReplaceAll(uniqueName("bound_kv"), ".", "_")
	js, _ := natsjs.New(jstest.Connect(b, srv))
	if _, err := js.CreateKeyValue(ctx, natsjs.KeyValueConfig{Bucket: bucket}); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			js, _ := natsjs.New(jstest.Connect(b, srv))
			kv, err := js.KeyValue(ctx, bucket)
			if err != nil {
				b.Error(err)
				return
			}
			for time.Now().Before(stop) {
				start := time.Now()
				for {
					var rev uint64
					if e, err := kv.Get(ctx, "k"); err == nil {
						rev = e.Revision()
					}
					if _, err := kv.Update(ctx, "k", []byte("v"), rev); err == nil {
						break
					}
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat
}
