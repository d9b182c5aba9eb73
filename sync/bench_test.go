package statesync_test

import (
	"context"
	"testing"
	"time"

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

// BenchmarkCatchUp: a new synchronizer, with an applied hook that has
// nobody to tell (a config that nobody watches), catching up on 10,000
// entries of the in-memory log, beside reading and decoding them alone.
func BenchmarkCatchUp(b *testing.B) {
	const pending = 10_000
	ctx := context.Background()
	log := memlog.New("b")
	if err := statesync.New[counter](log, counterCodec).Initialize(ctx, start(0)); err != nil {
		b.Fatal(err)
	}
	one, err := counterCodec.EncodeUpdates([]statesync.Update[counter]{add{N: 1}})
	if err != nil {
		b.Fatal(err)
	}
	for range pending {
		log.AppendRaw(one, false)
	}
	var ours, anchor time.Duration
	for b.Loop() {
		began := time.Now()
		err := log.ReadAfter(ctx, statesync.Position{}, pending+1, func(e statesync.Entry) error {
			if e.Snapshot {
				_, err := counterCodec.DecodeInitial(e.Data)
				return err
			}
			_, err := counterCodec.DecodeUpdates(e.Data)
			return err
		})
		anchor += time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		began = time.Now()
		s := statesync.New[counter](log, counterCodec, statesync.WithApplied(func(statesync.Applied[counter]) {}))
		err = s.Fetch(ctx)
		ours += time.Since(began)
		if st, _ := s.State(); err != nil || st != pending {
			b.Fatalf("caught up to %d, %v; want %d", st, err, pending)
		}
	}
	b.ReportMetric(float64(ours)/float64(anchor), "catch-up/read+decode")
}
