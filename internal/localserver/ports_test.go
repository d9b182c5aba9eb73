package localserver

import (
	"net"
	"strconv"
	"testing"
)

// The ports are distinct, free, and never ones the kernel hands to
// outgoing connections on its own.
func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	low, high := portsOutsideEphemeral()
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < low || p >= high || seen[p] {
			t.Fatalf("port %d: repeated, or outside [%d, %d)", p, low, high)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
	// An outgoing connection's local port is in the kernel's range.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if local := c.LocalAddr().(*net.TCPAddr).Port; local >= low && local < high {
		t.Fatalf("an outgoing connection got port %d, inside the range chosen from [%d, %d)", local, low, high)
	}
}
