package turns

import (
	"fmt"
	"testing"
)

// Words from ids nobody writes as cannot make a manager hold more than
// maxRemembered waiters, however many there are.
func TestMadeUpWaitersAreBounded(t *testing.T) {
	c := New(Options{})
	for i := range 10 * maxRemembered {
		c.hear(fmt.Appendf(nil, "wait %040d 1", i))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.waiting); n > maxRemembered || n == 0 {
		t.Errorf("%d waiters remembered, want 1 to %d", n, maxRemembered)
	}
}
