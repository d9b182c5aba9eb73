package sharedconfig_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// pausingLog holds a read at the entry of revision at, until released
// (or, so that a watch that waits for the read cannot hang the test, a
// while passes).
type pausingLog struct {
	statesync.Log
	at      uint64
	reached chan struct{}
	release chan struct{}
}

func (l *pausingLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	return l.Log.ReadAfter(ctx, after, upTo, func(e statesync.Entry) error {
		if e.Revision == l.at {
			close(l.reached)
			select {
			case <-l.release:
			case <-time.After(3 * time.Second):
			}
		}
		return fn(e)
	})
}

// A watch that starts while a catch-up is under way hears every entry
// after the revision it started at, each once: the ones that catch-up
// takes in included.
func TestWatchStartedDuringACatchUpMissesNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	writer := e.open(sharedconfig.Options{})
	jl, err := jetstream.OpenLog(ctx, jstest.Connect(t, e.srv), "test", e.name, jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	paused := &pausingLog{Log: jl, reached: make(chan struct{}), release: make(chan struct{})}
	reader, err := sharedconfig.Open(ctx, paused, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for i := range 30 { // revisions 2 to 31
		put(t, writer, "k", string(rune('a'+i%26)))
	}
	paused.at = 20
	refreshed := make(chan error, 1)
	go func() { refreshed <- reader.Refresh(ctx) }()
	<-paused.reached
	var mu sync.Mutex
	var heard []uint64
	stop, err := reader.Watch("", func(ch sharedconfig.Change) {
		mu.Lock()
		heard = append(heard, ch.Revision)
		mu.Unlock()
	}, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	startedBy := reader.State().Revision() // the watch started at this revision or before
	close(paused.release)
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // revisions 32 to 34
		put(t, writer, "k", string(rune('x'+i)))
	}
	heardUpTo(t, &mu, &heard, 34)
	mu.Lock()
	defer mu.Unlock()
	if heard[0] > startedBy+1 {
		t.Fatalf("the watch, started at revision %d or before, heard %v: it missed the entries from %d", startedBy, heard, startedBy+1)
	}
	for i := 1; i < len(heard); i++ {
		if heard[i] != heard[i-1]+1 {
			t.Fatalf("the watch heard %v: not each revision once, in order", heard)
		}
	}
}

// heardUpTo waits until the watch has heard revision last.
func heardUpTo(t *testing.T, mu *sync.Mutex, heard *[]uint64, last uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		h := *heard
		done := len(h) > 0 && h[len(h)-1] >= last
		mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the watch heard %v, not yet revision %d", *heard, last)
		}
	}
}
