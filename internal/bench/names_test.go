package bench

import "testing"

// Each phase gets a config of its own: a phase that started on the history
// of the one before would measure that history too.
func TestUniqueNamesDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n := uniqueName("contended")
		if seen[n] {
			t.Fatalf("uniqueName gave %q twice", n)
		}
		seen[n] = true
	}
}
