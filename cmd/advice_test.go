package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// The libraries' errors say what happened; the advice a user reads comes
// from here, found through any wrapping.
func TestAdviceForWhatTheLibrariesReport(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("opening stream SC_1_a_b: %w", jetstream.ErrNoJetStream), "start nats-server with -js"},
		{fmt.Errorf("SC_1_a_b: %w: insufficient resources (10023)", jetstream.ErrOutOfStorage), "free space on the server"},
		{fmt.Errorf("SC_1_a_b: a direct get answered without a sequence"), ""},
	} {
		got := advice(c.err)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("advice(%q) = %q; want it to say %q", c.err, got, c.want)
		}
	}
}
