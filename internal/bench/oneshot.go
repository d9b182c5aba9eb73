package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// oneShotRuns is how many processes each side of the one-shot figure
// starts, alternately, at most: no more than Options.Ops, since each is a
// timed operation, and at least 2 (the first cached run fills the cache).
const oneShotRuns = 21

// oneShotRunsFor is how many runs each side makes with ops operations per
// latency figure.
func oneShotRunsFor(ops int) int { return min(oneShotRuns, max(ops, 2)) }

// oneShot: "sharedconfig get KEY" on a config of Keys keys, as a whole
// process that starts from the replica cache, against a whole process that
// does what "nats kv get" does on a bucket of as many keys (binds the
// bucket, then a direct get of the last message for the key's subject).
// Both are this program, so both pay the same start. Without
// Options.Process the figure is left out.
func (r *runner) oneShot(ctx context.Context) ([]Row, error) {
	if r.o.Process == nil {
		return nil, nil
	}
	defer r.closeAll()
	name := uniqueName("oneshot")
	c, err := r.open(ctx, name, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	r.progress("one-shot get: writing the config", 0, 1)
	if err := writeSnapshot(ctx, c, r.o.Keys); err != nil {
		return nil, err
	}
	bucket, cleanup, err := r.filledBucket(ctx, r.o.Keys)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cache, err := os.MkdirTemp("", "sharedconfig-bench-cache")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cache)
	env := []string{"XDG_CACHE_HOME=" + cache}
	k := key(r.o.Keys / 2)
	get := []string{"-s", benchScope, "-n", name, "--writer", benchWriter, "get", k, "--raw"}
	uncached := append([]string{"--no-cache"}, get...)
	kvGet := []string{"bench", "--kv-get", bucket + "/" + k}
	var ours, anchor, whole []time.Duration
	runs := oneShotRunsFor(r.o.Ops)
	for i := range runs {
		r.progress("one-shot get", i, runs)
		for _, side := range []struct {
			args []string
			into *[]time.Duration
		}{{get, &ours}, {kvGet, &anchor}, {uncached, &whole}} {
			if i%4 != 0 && side.into == &whole {
				continue // the slow side, a few times
			}
			start := time.Now()
			if err := r.o.Process(ctx, env, side.args...); err != nil {
				return nil, fmt.Errorf("%q: %w", side.args, err)
			}
			*side.into = append(*side.into, time.Since(start))
		}
	}
	// The first cached run filled the cache: it is not a cached start.
	ours = ours[1:]
	x := row(fmt.Sprintf("one-shot get on a %d-key config, whole process", r.o.Keys), "ms", median(ours), median(anchor),
		"a direct get of the last message for a subject (nats kv get's), whole process").atMost(1)
	x.Note = fmt.Sprintf("p50 of %d processes each; without the replica cache (--no-cache) %.1f ms", len(ours), median(whole))
	return []Row{x}, nil
}

func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return ms(s[len(s)/2])
}

// filledBucket creates a KV bucket holding n keys, named as key names them,
// and returns its name and how to delete it.
func (r *runner) filledBucket(ctx context.Context, n int) (string, func(), error) {
	nc, err := r.connect()
	if err != nil {
		return "", nil, err
	}
	js, _ := jetstream.New(nc)
	bucket := "ONESHOT_" + nuid.Next()
	err = whilePlacing(ctx, func() error {
		_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Replicas: r.o.Replicas})
		return err
	})
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { js.DeleteKeyValue(context.Background(), bucket) }
	for i := range n {
		if _, err := js.PublishAsync("$KV."+bucket+"."+key(i), []byte(fmt.Sprint("value-", i))); err != nil {
			cleanup()
			return "", nil, err
		}
		if (i+1)%1024 != 0 && i != n-1 {
			continue
		}
		r.progress("one-shot get: filling the bucket", i, n)
		select { // at most 1,024 in flight
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			cleanup()
			return "", nil, ctx.Err()
		}
	}
	return bucket, cleanup, nil
}
