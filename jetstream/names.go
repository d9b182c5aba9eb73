package jetstream

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
		// Its start alone: the name may be as long as an argument can be.
		return fmt.Errorf("the %s %q... is %d bytes long: use at most %d letters, digits, '-' or '_'", kind, s[:MaxNameLength], len(s), MaxNameLength)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("the %s %q contains %s: use only letters, digits, '-' or '_'", kind, s, offending(s[i:]))
		}
	}
	return nil
}

// offending is the character s starts with, quoted: a byte that is not
// UTF-8 as itself (\xc3), not as the replacement character.
func offending(s string) string {
	if r, size := utf8.DecodeRuneInString(s); r != utf8.RuneError || size > 1 {
		return strconv.QuoteRune(r)
	}
	return fmt.Sprintf(`'\x%02x'`, s[0])
}

// MaxWriterLength bounds a writer's name (the Sharedconfig-Writer header
// of every entry, and the holder of its leases): JetStream refuses an entry
// whose headers pass 64 KiB, and LOG shows the name in a column.
const MaxWriterLength = 1024

// ValidateWriter checks a writer's name: 1 to MaxWriterLength bytes of
// UTF-8 text, no control characters (a header cannot hold a line break:
// it would become a space, and the name others see would not be the one
// given).
func ValidateWriter(s string) error {
	if s == "" {
		return fmt.Errorf("the writer's name is empty: give 1 to %d bytes of text", MaxWriterLength)
	}
	if len(s) > MaxWriterLength {
		return fmt.Errorf("the writer's name is %d bytes long: give at most %d", len(s), MaxWriterLength)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("the writer's name %q is not UTF-8 text", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("the writer's name %q contains the control character %q", s, r)
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

// ParseStreamName is StreamName's inverse: it reports ok=false for a stream
// name that StreamName cannot have made.
func ParseStreamName(stream string) (scope, name string, ok bool) {
	rest, found := strings.CutPrefix(stream, "SC_")
	if !found {
		return "", "", false
	}
	digits, rest, found := strings.Cut(rest, "_")
	if !found || digits == "" || digits[0] == '0' {
		return "", "", false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || n > MaxNameLength || len(rest) < n+2 || rest[n] != '_' {
		return "", "", false
	}
	scope, name = rest[:n], rest[n+1:]
	if ValidateName("scope", scope) != nil || ValidateName("name", name) != nil {
		return "", "", false
	}
	return scope, name, true
}

// Subject is the subject the stream for scope/name listens on. Names hold no
// '.', so the mapping is one to one.
func Subject(scope, name string) string { return "sharedconfig." + scope + "." + name }
