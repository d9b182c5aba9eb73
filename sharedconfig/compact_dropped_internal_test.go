package sharedconfig

import (
	"context"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// Every compaction the policy makes (after entries, REMOVEs or a CLEAR)
// leaves a copy dropped alone: the calls of a batch each compact after
// their answers, and once one found the config destroyed the others would
// each load it again, and fail, or compact another process's config
// created again since.
func TestPolicyCompactionsLeaveADroppedCopyAlone(t *testing.T) {
	ctx := context.Background()
	srv := jstest.Server(t)
	log, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "test", "dropped", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var failed []error
	c, err := Open(ctx, log, Options{CompactionFailed: func(err error) { failed = append(failed, err) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Put(ctx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	if err := jetstream.DeleteConfig(ctx, jstest.Connect(t, srv), "test", "dropped"); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err == nil {
		t.Fatal("the refresh did not find the config destroyed")
	}
	for _, due := range []func() bool{c.compactionDue, always, nil} {
		c.compact(ctx, due)
	}
	if len(failed) != 0 {
		t.Fatalf("the policy's compactions of a dropped copy failed: %v", failed)
	}
}
