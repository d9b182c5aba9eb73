package lease

import (
	"errors"
	"testing"
	"time"
)

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"10s": 10 * time.Second, "10": 10 * time.Second, "1.5": 1500 * time.Millisecond, "2m": 2 * time.Minute} {
		got, err := ParseTTL(in)
		if err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "0", "-5", "0.5s", "25h", "1.0001"} {
		if _, err := ParseTTL(in); !errors.Is(err, ErrBadTTL) {
			t.Errorf("ParseTTL(%q): %v, want ErrBadTTL", in, err)
		}
	}
}
