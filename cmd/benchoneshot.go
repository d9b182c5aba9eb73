package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/bench"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// benchProcess runs this program as a process of its own on the server at
// urls, for the one-shot figure: the command it was started as, found as
// the shell found it (not os.Executable, which resolves links: a program
// that answers to several names, as the tests' does, must keep this one).
func benchProcess(urls string) func(ctx context.Context, env []string, args ...string) error {
	exe, err := exec.LookPath(os.Args[0])
	if err != nil {
		return nil
	}
	return func(ctx context.Context, env []string, args ...string) error {
		c := exec.CommandContext(ctx, exe, args...)
		c.Env = append(append(os.Environ(), "NATS_URL="+urls, noCacheEnv+"="), env...)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
}

// kvGet gets KEY from BUCKET as "nats kv get" does: it binds the bucket
// (the stream's info), then a direct get of the last message for the key's
// subject; it prints the value.
func kvGet(cmd *cobra.Command, connOpts localserver.ConnectOptions, bucketKey string) error {
	bucket, key, ok := strings.Cut(bucketKey, "/")
	if !ok {
		return &exitError{exitStartup, fmt.Errorf("--kv-get %q: give BUCKET/KEY", bucketKey)}
	}
	nc, err := localserver.Connect(connOpts)
	if err != nil {
		return &exitError{exitStartup, err}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return &exitError{exitStartup, err}
	}
	kv, err := js.KeyValue(cmd.Context(), bucket)
	if err != nil {
		return &exitError{exitFailures, err}
	}
	e, err := kv.Get(cmd.Context(), key)
	if err != nil {
		return &exitError{exitFailures, err}
	}
	_, err = cmd.OutOrStdout().Write(e.Value())
	return err
}

// onlyPhases is phases, or those named in only.
func onlyPhases(phases []bench.Phase, only []string) ([]bench.Phase, error) {
	if len(only) == 0 {
		return phases, nil
	}
	var kept []bench.Phase
	for _, p := range phases {
		if slices.Contains(only, p.Name) {
			kept = append(kept, p)
		}
	}
	if len(kept) != len(only) {
		return nil, fmt.Errorf("--phase %q: not all of these are phases of this run", strings.Join(only, ","))
	}
	return kept, nil
}
