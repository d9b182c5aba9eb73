package statesync_test

import (
	"context"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// nullLog accepts every conditional append and keeps nothing, so that a
// benchmark times the synchronizer alone.
type nullLog struct{ *memlog.Log }

func (nullLog) AppendAfter(_ context.Context, last statesync.Position, _ []byte) (statesync.Position, error) {
	return statesync.Position{Revision: last.Revision + 1}, nil
}

// BenchmarkLoneUpdate: one caller at a time, on a log that costs nothing:
// the synchronizer's own cost per write (group commit's queue included).
func BenchmarkLoneUpdate(b *testing.B) {
	s := statesync.New[counter](nullLog{memlog.New("b")}, counterCodec)
	if err := s.Initialize(context.Background(), start(0)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := increment(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}
