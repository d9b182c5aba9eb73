package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The lone writer of the interjected figure writes at least once a slice,
// even one shorter than its interval (bench.txtar's tiny sizes), and only
// writer w is the lone one: the loopers are 0 to w-1.
func TestInterjectingWritesAtLeastOncePerSlice(t *testing.T) {
	var loops, lones atomic.Int64
	write := func(i int) (int, error) {
		time.Sleep(time.Millisecond)
		if i == 2 {
			lones.Add(1)
		} else {
			loops.Add(1)
		}
		return 1, nil
	}
	lone, err := (&runner{}).interjecting(context.Background(), 2, interjectEvery-time.Millisecond, write)
	if err != nil {
		t.Fatal(err)
	}
	if len(lone) < 1 || int64(len(lone)) != lones.Load() {
		t.Fatalf("%d lone writes timed, %d made; want at least one, all timed", len(lone), lones.Load())
	}
	if loops.Load() == 0 {
		t.Fatal("the looping writers made no write")
	}
}
