package sharedconfig

import "time"

// SetServerClock makes c read the server's clock from now, as tests of
// leases on a MemLog with a fake clock need.
func SetServerClock(c *Config, now func() time.Time) {
	c.leases.mu.Lock()
	defer c.leases.mu.Unlock()
	c.leases.clock = now
}
