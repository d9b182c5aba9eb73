package sharedconfig

// Unexported names the external tests (package sharedconfig_test) check.
var (
	ErrNothingToRepair = errNothingToRepair
	MinLeaseTTL        = minLeaseTTL
)

// Watched reports whether the log was being written when l fell due (see
// Lease.watched).
func Watched(l Lease) bool { return l.watched }
