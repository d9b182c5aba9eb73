package cmd

import (
	"os"
	"testing"

	"github.com/sharedconfig/sharedconfig/internal/testmain"
)

func TestMain(m *testing.M) {
	// The tests say for themselves whether the replica cache is on: one the
	// user turned off would fail those that run in parallel, which cannot
	// set the environment.
	os.Unsetenv(noCacheEnv)
	testmain.Run(m)
}
