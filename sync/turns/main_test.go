package turns_test

import (
	"context"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"sync"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

func TestMain(m *testing.M) { testmain.Run(m) }

type (
	counter = example.Counter
	add     = example.Add
)

var (
	increment    = example.Increment
	counterCodec = example.CounterCodec{}
)

// ids holds the id of each synchronizer newCounter made, by synchronizer.
var ids sync.Map

// newCounter returns a synchronizer of a counter on log that takes turns
// with the options o, initialized to 0 and closed at the test's end.
func newCounter(t *testing.T, log statesync.Log, o turns.Options, opts ...statesync.Option) *statesync.Synchronizer[counter] {
	t.Helper()
	m := turns.New(o)
	s := statesync.New[counter](log, example.CounterCodec{}, append(opts, statesync.WithTurns(m))...)
	ids.Store(s, m.ID())
	t.Cleanup(func() { ids.Delete(s) })
	if err := s.Initialize(context.Background(), example.CounterStart{}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return s
}

// turnID is the id s's words and entries name it by.
func turnID(s *statesync.Synchronizer[counter]) string {
	id, _ := ids.Load(s)
	return id.(string)
}

func value(t *testing.T, s *statesync.Synchronizer[counter]) counter {
	t.Helper()
	st, rev := s.State()
	if rev == 0 {
		t.Fatal("state not initialized")
	}
	return st
}

// waitFor polls cond until it holds, failing the test after a long while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
