package bench

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// BenchmarkGroupCommit: 16 goroutines putting one key through one config on
// one connection, whose queued calls share appends, against 16 configs on 16
// connections. Each iteration is 16 puts each way; ns/op figures are per
// iteration.
func BenchmarkGroupCommit(b *testing.B) {
	ctx := context.Background()
	srv := jstest.Server(b)
	shared := openBench(b, jstest.Connect(b, srv), "group")
	separate := make([]*sharedconfig.Config, groupWriters)
	for i := range separate {
		separate[i] = openBench(b, jstest.Connect(b, srv), "separate")
	}
	putAll := func(configs func(i int) *sharedconfig.Config) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for i := range groupWriters {
			wg.Go(func() {
				if _, err := configs(i).Put(ctx, "key", strconv.Itoa(i)); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var ours, anchor time.Duration
	for b.Loop() {
		anchor += putAll(func(i int) *sharedconfig.Config { return separate[i] })
		ours += putAll(func(int) *sharedconfig.Config { return shared })
	}
	reportRatio(b, ours, anchor, "one-config", "16-configs")
}
