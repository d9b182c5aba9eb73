package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	scjs "github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// ScalePhases are the measurements of "bench --scale": many configs on one
// server, and one config followed by many connections. They take minutes,
// so the default run leaves them out.
var ScalePhases = []Phase{
	{"configs", (*runner).manyConfigs},
	{"followers", (*runner).followers},
}

// manyConfigs: Options.Configs configs created (each opened and given one
// PUT) against as many raw streams created and given one conditional
// publish; listing them against the raw stream listing; and the heap the
// server holds per config against per raw stream.
func (r *runner) manyConfigs(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	n := max(r.o.Configs, 1)
	nc, err := r.connect()
	if err != nil {
		return nil, err
	}
	js, _ := jetstream.New(nc)
	ours, raw := uniqueName("many"), uniqueName("manyraw")
	defer deleteStreams(context.WithoutCancel(ctx), js, ours, raw, n)
	heap0 := liveHeap()
	create, err := r.forEachConfig(n, "creating configs", func(i int) error {
		c, err := openReplicated(ctx, nc, fmt.Sprintf("%s_%d", ours, i), r.o.Replicas, sharedconfig.Options{})
		if err == nil {
			_, err = c.Put(ctx, "key", "value")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	heap1 := liveHeap()
	list, rawList, err := r.listings(ctx, nc, n)
	if err != nil {
		return nil, err
	}
	rawCreate, err := r.forEachConfig(n, "creating raw streams", func(i int) error {
		return createRawStream(ctx, js, fmt.Sprintf("%s_%d", raw, i), r.o.Replicas)
	})
	if err != nil {
		return nil, err
	}
	heap2 := liveHeap()
	perConfig := (float64(heap1) - float64(heap0)) / float64(n)
	perStream := (float64(heap2) - float64(heap1)) / float64(n)
	mem := row(fmt.Sprintf("heap per config, %d configs", n), "bytes", perConfig, perStream, "per raw stream with one message")
	mem.Note = "growth of the bench process's live heap, clients idle: the server's own where the bench runs it in-process"
	return []Row{
		row(fmt.Sprintf("create %d configs, one PUT each", n), "ms", ms(create), ms(rawCreate), "raw streams created, one conditional publish each"),
		row(fmt.Sprintf("list %d configs", n), "ms", ms(list), ms(rawList), "raw stream listing"),
		mem,
	}, nil
}

// forEachConfig runs do for 0..n-1 in order and returns how long that took.
func (r *runner) forEachConfig(n int, what string, do func(i int) error) (time.Duration, error) {
	start := time.Now()
	for i := range n {
		r.progress(what, i, n)
		if err := do(i); err != nil {
			return 0, fmt.Errorf("%s, %d of %d: %w", what, i+1, n, err)
		}
	}
	return time.Since(start), nil
}

// listings times ListConfigs and the raw listing of the same streams, each
// twice, in the order a b b a, and checks that ListConfigs saw them all.
func (r *runner) listings(ctx context.Context, nc *nats.Conn, n int) (ours, raw time.Duration, err error) {
	js, _ := jetstream.New(nc)
	for i, side := range []string{"ours", "raw", "raw", "ours"} {
		r.progress("listing", i, 4)
		start := time.Now()
		if side == "ours" {
			configs, err := scjs.ListConfigs(ctx, nc)
			if err != nil {
				return 0, 0, err
			}
			if len(configs) < n {
				return 0, 0, fmt.Errorf("list showed %d configs, want at least %d", len(configs), n)
			}
			ours += time.Since(start)
			continue
		}
		lister := js.ListStreams(ctx, jetstream.WithStreamListSubject("sharedconfig.>"))
		for range lister.Info() {
		}
		if err := lister.Err(); err != nil {
			return 0, 0, err
		}
		raw += time.Since(start)
	}
	return ours / 2, raw / 2, nil
}

// createRawStream makes the stream a config named name would have, with
// nats.go alone, and publishes one update entry into it conditionally.
func createRawStream(ctx context.Context, js jetstream.JetStream, name string, replicas int) error {
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     scjs.StreamName(benchScope, name),
		Subjects: []string{scjs.Subject(benchScope, name)},
		Storage:  jetstream.FileStorage,
		Replicas: max(replicas, 1),
		MaxMsgs:  -1, MaxBytes: -1,
		DenyDelete: true, AllowRollup: true, AllowDirect: true,
		Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return err
	}
	_, err = js.PublishMsg(ctx, updateEntry(name, "key", "value"), jetstream.WithExpectLastSequence(0))
	return err
}

// updateEntry is the entry a PUT of key=value writes into config name.
func updateEntry(name, key, value string) *nats.Msg {
	entry := nats.NewMsg(scjs.Subject(benchScope, name))
	entry.Data = fmt.Appendf(nil, `{"ops":[{"op":"put","key":%q,"value":%q}]}`, key, value)
	entry.Header.Set(scjs.HeaderFormat, scjs.FormatVersion)
	entry.Header.Set(scjs.HeaderKind, scjs.KindUpdate)
	entry.Header.Set(scjs.HeaderWriter, benchWriter)
	return entry
}

// deleteStreams removes the streams manyConfigs made, so that a server the
// bench shares is left as it was.
func deleteStreams(ctx context.Context, js jetstream.JetStream, ours, raw string, n int) {
	for i := range n {
		js.DeleteStream(ctx, scjs.StreamName(benchScope, fmt.Sprintf("%s_%d", ours, i)))
		js.DeleteStream(ctx, scjs.StreamName(benchScope, fmt.Sprintf("%s_%d", raw, i)))
	}
}
