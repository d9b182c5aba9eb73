// Package testmain is the TestMain of this module's test packages: it fails
// a package whose tests leave goroutines behind (goleak), and spares a
// -race test binary the race runtime's sleep at exit.
//
// A binary built with -race sleeps a second as it exits, to give late
// goroutines time to report a race. go test runs as many test binaries at
// once as there are CPUs, so that second is spent once per package with a
// CPU slot held idle. The tests here catch their races while they run (the
// testing package fails the test that raced), and goleak fails a package
// that leaves goroutines behind, so the sleep finds nothing more.
package testmain

import (
	"testing"

	"go.uber.org/goleak"
)

// Run runs the tests of m, checks for leaked goroutines (ignoring those
// opts name) and exits. Call it from TestMain.
func Run(m *testing.M, opts ...goleak.Option) {
	SkipRaceExitSleep()
	goleak.VerifyTestMain(m, opts...)
}
