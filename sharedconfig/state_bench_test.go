package sharedconfig

import (
	"fmt"
	"testing"
)

// The state's own costs, without a server: what a PUT, a GET, a catch-up's
// batch and a join's snapshot cost the map, at 10 keys and at 100,000.

func stateOfSize(n int) State {
	var b []pending
	for i := range n {
		b = append(b, pending{Update: putUpdate{Key: fmt.Sprintf("key%07d", i), Value: fmt.Sprintf("value-%d", i)}, Revision: uint64(i + 1)})
	}
	return applyBatch(State{}, b)
}

// BenchmarkStatePut: rewriting a key with 10 keys and with 100,000.
func BenchmarkStatePut(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			s := stateOfSize(n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				s = putUpdate{Key: fmt.Sprintf("key%07d", i*7919%n), Value: "v"}.Apply(s, uint64(n+i))
			}
		})
	}
}

// BenchmarkStateGet: a GET with 100,000 keys, which allocates nothing.
func BenchmarkStateGet(b *testing.B) {
	s := stateOfSize(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Lookup("key0050000"); !ok {
			b.Fatal("missing")
		}
	}
}

// A catch-up's batch: 4,096 entries writing 100 keys over and over (as
// BenchmarkCatchUp's log), and 4,096 new keys into 100,000.
func BenchmarkStateApplyAll(b *testing.B) {
	for _, c := range []struct {
		name             string
		keys, mod, start int
	}{{"rewrite-100-keys", 100, 100, 0}, {"new-keys-into-100k", 100_000, 0, 100_000}} {
		b.Run(c.name, func(b *testing.B) {
			s := stateOfSize(c.keys)
			var batch []pending
			for i := range 4096 {
				k := c.start + i
				if c.mod > 0 {
					k = i % c.mod
				}
				batch = append(batch, pending{Update: putUpdate{Key: fmt.Sprintf("key%07d", k), Value: fmt.Sprint(i)}, Revision: uint64(c.keys + i + 1)})
			}
			b.ReportAllocs()
			for b.Loop() {
				applyBatch(s, batch)
			}
		})
	}
}

// Joining after compaction decodes a snapshot of 100,000 keys.
func BenchmarkStateDecodeSnapshot(b *testing.B) {
	data, err := codec{}.EncodeInitial(snapshotUpdate{State: stateOfSize(100_000)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (codec{}).DecodeInitial(data); err != nil {
			b.Fatal(err)
		}
	}
}
