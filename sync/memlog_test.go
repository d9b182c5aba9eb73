package statesync_test

import (
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

func TestMemLogConformance(t *testing.T) {
	logtest.Run(t, func(t *testing.T) statesync.Log { return statesync.NewMemLog(t.Name()) })
}
