package jetstream_test

import (
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// ParseStreamName undoes StreamName, even where '_' is in both parts, and
// refuses names StreamName cannot make.
func TestParseStreamName(t *testing.T) {
	for _, sn := range [][2]string{{"a_b", "c"}, {"a", "b_c"}, {"example", "someConfig"}, {"-", "_"}} {
		scope, name, ok := jetstream.ParseStreamName(jetstream.StreamName(sn[0], sn[1]))
		if !ok || scope != sn[0] || name != sn[1] {
			t.Errorf("ParseStreamName(StreamName(%q, %q)) = %q, %q, %v", sn[0], sn[1], scope, name, ok)
		}
	}
	for _, bad := range []string{"", "SC_", "SC_0__x", "SC_01_a_b", "SC_2_a_b", "SC_1_a_", "SC_1_ab", "KV_1_a_b", "SC_x_a_b", "SC_1_a_b.c", "SC_99999999999999999999_a_b"} {
		if scope, name, ok := jetstream.ParseStreamName(bad); ok {
			t.Errorf("ParseStreamName(%q) = %q, %q; want not ok", bad, scope, name)
		}
	}
}
