package replicacache_test

import (
	"testing"

	"github.com/sharedconfig/sharedconfig/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
