package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/bench"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// BenchmarkFigures is the go test -bench form of "sharedconfig bench": one
// sub-benchmark per phase, each reporting its figures beside their anchors
// and their ratios. The sizes are smaller than the command's (set them with
// the command for the full run). Each iteration measures the whole phase.
func BenchmarkFigures(b *testing.B) {
	srv := jstest.Server(b)
	o := bench.Options{
		Connect: func() (*nats.Conn, error) {
			return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
		},
		Ops: 500, Keys: 10_000, Entries: 10_000, Writers: []int{1, 4, 16}, Duration: time.Second,
	}
	runFigures(b, bench.Phases, o)
}

// BenchmarkClusterFigures is the go test -bench form of "sharedconfig bench
// --cluster": the cluster phases on R3 streams of a 3-node cluster.
func BenchmarkClusterFigures(b *testing.B) {
	urls := jstest.URLs(jstest.Cluster(b, 3))
	o := bench.Options{
		Connect: func() (*nats.Conn, error) { return localserver.Connect(localserver.ConnectOptions{URLs: urls}) },
		Ops:     200, Writers: []int{1, 4, 16}, Duration: time.Second, Replicas: 3,
	}
	runFigures(b, bench.ClusterPhases, o)
}

// BenchmarkScaleFigures is the go test -bench form of "sharedconfig bench
// --scale", smaller: 200 configs, and 20 connections following one for 20
// commits (a commit one follower hears late costs its 5 s poll).
func BenchmarkScaleFigures(b *testing.B) {
	srv := jstest.Server(b)
	o := bench.Options{
		Connect: func() (*nats.Conn, error) {
			return localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
		},
		Ops: 20, Configs: 200, Followers: 20,
	}
	runFigures(b, bench.ScalePhases, o)
}

// BenchmarkClusterScaleFigures is the go test -bench form of "sharedconfig
// bench --scale --cluster", smaller still: 100 configs, 10 commits.
func BenchmarkClusterScaleFigures(b *testing.B) {
	urls := jstest.URLs(jstest.Cluster(b, 3))
	o := bench.Options{
		Connect: func() (*nats.Conn, error) { return localserver.Connect(localserver.ConnectOptions{URLs: urls}) },
		Ops:     10, Configs: 100, Followers: 20, Replicas: 3,
	}
	runFigures(b, bench.ScalePhases, o)
}

func runFigures(b *testing.B, phases []bench.Phase, o bench.Options) {
	for _, phase := range phases {
		b.Run(phase.Name, func(b *testing.B) {
			var rows []bench.Row
			for b.Loop() {
				var err error
				if rows, err = phase.Run(context.Background(), o); err != nil {
					b.Fatal(err)
				}
			}
			for _, r := range rows {
				name := strings.NewReplacer(" ", "-", ",", "", ":", "", "/", "-").Replace(r.Name)
				b.ReportMetric(r.Ours, name+"-"+r.Unit)
				if r.AnchorName != "" {
					b.ReportMetric(r.Ratio, name+"-ratio")
				}
			}
		})
	}
}

// The memory figure weighs the state: at least the bytes of its keys and
// values, however the rest of the heap moves.
func TestMemoryFigureWeighsTheState(t *testing.T) {
	rows, err := memoryPhase(t).Run(context.Background(), bench.Options{Keys: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Ours < rows[0].Anchor {
		t.Fatalf("memory figure %+v; want more bytes per key than the raw keys and values hold", rows)
	}
}

// At 100,000 keys, the state takes at most 4 times the bytes of its keys
// and values (the target docs/performance.md gives). One weighing, not
// the command's five: each builds the state anew, 1.7 s of CPU under -race
// (and several times that on a loaded machine, where it delays the packages
// after this one), and no server shares this process to move it: three
// agreed to 0.1 byte a key, at 2.14×.
func TestMemoryFigureMeetsItsTarget(t *testing.T) {
	defer bench.SetMemorySamples(1)()
	rows, err := memoryPhase(t).Run(context.Background(), bench.Options{Keys: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Met == nil || !*r.Met {
		t.Fatalf("%.1f bytes per key for %.1f raw (%.2f×; %s), want at most 4×", r.Ours, r.Anchor, r.Ratio, r.Note)
	}
	t.Logf("%.2f×: %s", rows[0].Ratio, rows[0].Note)
}

// BenchmarkMemory is the go test -bench form of the memory figure at the
// command's size: the state's heap bytes per key at 100,000 keys (the
// median of the phase's weighings) beside the raw bytes of its keys and
// values. It needs no server.
func BenchmarkMemory(b *testing.B) {
	var rows []bench.Row
	for b.Loop() {
		var err error
		if rows, err = memoryPhase(b).Run(context.Background(), bench.Options{Keys: 100_000}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rows[0].Ours, "bytes/key")
	b.ReportMetric(rows[0].Anchor, "raw-bytes/key")
	b.ReportMetric(rows[0].Ratio, "ratio")
	b.ReportMetric(0, "ns/op") // the figures above are the result
}

func memoryPhase(t testing.TB) bench.Phase {
	for _, p := range bench.Phases {
		if p.Name == "memory" {
			return p
		}
	}
	t.Fatal("no memory phase")
	return bench.Phase{}
}
