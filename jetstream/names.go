package jetstream

import (
	"fmt"
	"strconv"
)

// MaxNameLength bounds scopes and names so that stream names stay well under
// JetStream's limits.
const MaxNameLength = 64

// ValidateName checks a scope or a config name. Allowed: 1 to 64 ASCII
// letters, digits, '-' and '_'. JetStream stream and subject names forbid
// '.', '*', '>', white space and path separators; this narrower set is the
// same as Pravega's and safe everywhere.
func ValidateName(kind, s string) error {
	if s == "" {
		return fmt.Errorf("the %s is empty: use 1 to %d letters, digits, '-' or '_'", kind, MaxNameLength)
	}
	if len(s) > MaxNameLength {
		return fmt.Errorf("the %s %q is %d characters long: use at most %d letters, digits, '-' or '_'", kind, s, len(s), MaxNameLength)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("the %s %q contains %q: use only letters, digits, '-' or '_'", kind, s, r)
		}
	}
	return nil
}

// StreamName is the JetStream stream that holds scope/name. The scope's
// length is part of the name, so that no two (scope, name) pairs share a
// stream even though '_' may appear in both: ("a_b", "c") and ("a", "b_c")
// become SC_3_a_b_c and SC_1_a_b_c.
func StreamName(scope, name string) string {
	return "SC_" + strconv.Itoa(len(scope)) + "_" + scope + "_" + name
}

// Subject is the subject the stream for scope/name listens on. Names hold no
// '.', so the mapping is one to one.
func Subject(scope, name string) string { return "sharedconfig." + scope + "." + name }
