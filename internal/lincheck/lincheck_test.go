package lincheck_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/sharedconfig/sharedconfig/internal/lincheck"
)

// recorder is a testing.TB that records a failure instead of ending the
// test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// register is a single register: a write sets it, a read returns it.
var register = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		in := input.([2]int) // {0: read, 1: write}, value
		if in[0] == 1 {
			return true, in[1]
		}
		return output.(int) == state.(int), state
	},
}

func TestCheckPassesLinearizableAndFailsOtherHistories(t *testing.T) {
	write := porcupine.Operation{ClientId: 0, Input: [2]int{1, 7}, Call: 0, Return: 10, Output: 0}
	good := []porcupine.Operation{write, {ClientId: 1, Input: [2]int{0, 0}, Call: 20, Return: 30, Output: 7}}
	bad := []porcupine.Operation{write, {ClientId: 1, Input: [2]int{0, 0}, Call: 20, Return: 30, Output: 0}} // a stale read after the write returned
	r := &recorder{TB: t}
	lincheck.Check(r, register, good)
	if r.failed != "" {
		t.Fatalf("a linearizable history failed: %s", r.failed)
	}
	lincheck.Check(r, register, bad)
	if !strings.Contains(r.failed, "not linearizable") {
		t.Fatalf("a stale read after a write passed (%q)", r.failed)
	}
	os.Remove(r.failed[strings.LastIndex(r.failed, " ")+1:]) // the visualisation
}
