package logtest_test

import (
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// The suite on the in-memory log; jetstream's tests run it on JetStream.
func TestMemLogConformance(t *testing.T) {
	logtest.Run(t, func(t *testing.T) statesync.Log { return memlog.New(t.Name()) })
}

func TestMemLogIncarnations(t *testing.T) {
	logtest.RunIncarnations(t, func(t *testing.T) (statesync.Log, func()) {
		l := memlog.New(t.Name())
		return l, l.Recreate
	})
}

func TestMemLogEmptied(t *testing.T) {
	logtest.RunEmptied(t, func(t *testing.T) (statesync.Log, func()) {
		l := memlog.New(t.Name())
		return l, l.Purge
	})
}
