// Package linearizability_test checks histories of sharedconfig's
// operations, leases included, against models of them with porcupine. It
// is a package of its own, not part of sharedconfig's tests, so that go
// test runs its long runs in a process of their own, beside sharedconfig's
// (it runs as many test binaries at once as there are CPUs).
package linearizability_test

import (
	"testing"

	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

func TestMain(m *testing.M) {
	jstest.MoreInParallel()
	testmain.Run(m)
}
