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

func TestTargetsAreShownAsGiven(t *testing.T) {
	for x, want := range map[float64]string{1.15: "≤ 1.15×", 1.2: "≤ 1.2×", 4: "≤ 4.0×"} {
		if got := (Row{Ratio: 1}).atMost(x).Target; got != want {
			t.Errorf("atMost(%v) shows %q, want %q", x, got, want)
		}
	}
}
