package sharedconfig

import "time"

// Unexported names the external tests (package sharedconfig_test) check.
var (
	ErrNothingToRepair = errNothingToRepair
)

// Watched reports whether the log was being written when lease name of s
// fell due (see leaseRecord.watched).
func Watched(s State, name string) bool {
	r, _ := s.lease(name)
	return r.watched
}

// EntriesSinceCompaction is the history a new reader of c would replay.
func (c *Config) EntriesSinceCompaction() uint64 { return c.sync.EntriesSinceCompaction() }

// LastCarried is when c last read or wrote an entry carrying handed calls.
func (c *Config) LastCarried() time.Time { return c.sync.LastCarried() }
