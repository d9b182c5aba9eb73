package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// interjected: one PUT now and then among writers in closed loops, as a
// person's among scripts' (issue 22: a writer that is not looping should
// wait at most one turn of another writer). W writers loop on one key of
// one config while one more writer on its own connection puts the key
// every interjectEvery; its latency, beside the same on NATS KV (W
// get-then-update loops and one more update now and then), the two sides
// in alternating slices as the contended figure's.
func (r *runner) interjected(ctx context.Context) ([]Row, error) {
	var rows []Row
	for _, w := range r.o.Writers {
		if w < 2 {
			continue
		}
		r.progress(fmt.Sprintf("interjected, %d writers", w), 0, 1)
		ours, kv, err := r.interjectedBesideKV(ctx, w)
		if err != nil {
			return rows, err
		}
		x := row(fmt.Sprintf("a PUT among %d looping writers, p50", w), "µs", percentile(ours, 0.5), percentile(kv, 0.5), "NATS KV Update").atMost(1.0)
		x.Note = fmt.Sprintf("%d PUTs, slowest %.0f ms (KV: %d, %.0f ms); a turn is at most 40 ms", len(ours), ms(slices.Max(ours)), len(kv), ms(slices.Max(kv)))
		rows = append(rows, x)
	}
	return rows, nil
}

// interjectEvery is how often the lone writer puts: far apart enough that
// it never keeps a turn (turns.Options.BackToBack).
const interjectEvery = 25 * time.Millisecond

// interjectedBesideKV runs w looping writers and one lone writer of ours,
// then of KV, in turnsEach slices each in the order a b b a, and returns
// the lone writer's latencies on each side.
func (r *runner) interjectedBesideKV(ctx context.Context, w int) (ours, kv []time.Duration, err error) {
	defer r.closeAll()
	oursWrite, err := r.openPutters(ctx, uniqueName("interjected"), w+1)
	if err != nil {
		return nil, nil, err
	}
	kvWrite, cleanup, err := r.openKV(ctx, w+1)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	slice := r.o.Duration / turnsEach
	for i := range 2 * turnsEach {
		aNext := i%4 == 0 || i%4 == 3
		write := kvWrite
		if aNext {
			write = oursWrite
		}
		lone, err := r.interjecting(ctx, w, slice, write)
		if err != nil {
			return nil, nil, err
		}
		if aNext {
			ours = append(ours, lone...)
		} else {
			kv = append(kv, lone...)
		}
	}
	return ours, kv, nil
}

// interjecting runs writers 0 to w-1 of write in closed loops for d, and
// writer w once every interjectEvery meanwhile, and returns how long each
// of writer w's writes took.
func (r *runner) interjecting(ctx context.Context, w int, d time.Duration, write func(i int) (int, error)) ([]time.Duration, error) {
	var lone []time.Duration
	var loneErr error
	var wg sync.WaitGroup
	loneCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	wg.Go(func() {
		tick := time.NewTicker(interjectEvery)
		defer tick.Stop()
		for {
			if len(lone) == 0 {
				<-tick.C // at least one write a slice, however short
			} else {
				select {
				case <-loneCtx.Done():
					return
				case <-tick.C:
				}
			}
			start := time.Now()
			if _, err := write(w); err != nil {
				if loneCtx.Err() == nil {
					loneErr = err
				}
				return
			}
			lone = append(lone, time.Since(start))
		}
	})
	_, err := r.runWriters(ctx, w, d, write)
	wg.Wait()
	return lone, cmp(err, loneErr)
}
