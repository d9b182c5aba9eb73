// Package lincheck checks a history of operations for linearizability with
// porcupine, for the tests that record one (the linearizability runs of
// the config and of its leases).
package lincheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Timeout bounds porcupine's search.
const Timeout = 2 * time.Minute

// Check fails t unless porcupine finds history linearizable under model,
// and names the file with porcupine's visualisation if it does not.
func Check(t testing.TB, model porcupine.Model, history []porcupine.Operation) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(model, history, Timeout)
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		file := filepath.Join(os.TempDir(), fmt.Sprintf("sharedconfig-linearizability-%s-%d.html", t.Name()[strings.LastIndex(t.Name(), "/")+1:], time.Now().Unix()))
		if f, err := os.Create(file); err == nil {
			porcupine.Visualize(model, info, f)
			f.Close()
		}
		t.Fatalf("the history is not linearizable; porcupine's visualisation is in %s", file)
	default:
		t.Fatalf("porcupine could not decide within %v (%v)", Timeout, res)
	}
}
