package localserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePorts returns n loopback ports that are free now, chosen at random
// outside the kernel's ephemeral range. A port the kernel picked for a
// listener on port 0 is, once closed, the kind it hands to any outgoing
// connection's local end; a server started on it later (the cluster's
// routes name every port before any node starts; a local server's port is
// recorded and used again at every start) can find it taken.
func FreePorts(n int) ([]int, error) {
	low, high := portsOutsideEphemeral()
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no free loopback port between %d and %d", low, high-1)
		}
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// portsOutsideEphemeral is a range of ports [low, high) the kernel does not
// hand out on its own: below its ephemeral range if there is room there,
// else above it, else any unprivileged port.
func portsOutsideEphemeral() (low, high int) {
	first, last := 32768, 60999 // Linux's default; macOS's starts at 49152
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			z, errZ := strconv.Atoi(f[1])
			if errA == nil && errZ == nil && a <= z {
				first, last = a, z
			}
		}
	}
	switch {
	case first-10000 >= 2000:
		return 10000, first
	case 65536-(last+1) >= 2000:
		return last + 1, 65536
	}
	return 1024, 65536
}
