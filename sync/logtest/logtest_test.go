package logtest_test

import (
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// The suite on the in-memory log; jetstream's tests run it on JetStream.
func TestMemLogConformance(t *testing.T) {
	logtest.Run(t, func(t *testing.T) statesync.Log { return statesync.NewMemLog(t.Name()) })
}

func TestMemLogIncarnations(t *testing.T) {
	logtest.RunIncarnations(t, func(t *testing.T) (statesync.Log, func()) {
		l := statesync.NewMemLog(t.Name())
		return l, l.Recreate
	})
}
