package cmd

import (
	"slices"
	"strings"
	"testing"
)

func TestNormalizeArgs(t *testing.T) {
	for _, tc := range []struct {
		in, want string // space-separated
	}{
		{"-scope s -name n", "--scope s --name n"},
		{"-scope=s -name=n get k", "--scope=s --name=n get k"},
		{"-uri tcp://h:9090", "--server tcp://h:9090"},
		{"-s -scope get k", "-s -scope get k"},         // a value, not an option
		{"--name -weird get k", "--name -weird get k"}, // likewise
		{"put k -- -scope", "put k -- -scope"},
		{"-f - -o json", "-f - -o json"},
		{"--follow -n x", "--follow -n x"},
	} {
		got, err := normalizeArgs(newRoot(), strings.Fields(tc.in))
		if err != nil || !slices.Equal(got, strings.Fields(tc.want)) {
			t.Errorf("normalizeArgs(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"-sfoo", "-timeout 1s", "get -key", "--trace -server x"} {
		if got, err := normalizeArgs(newRoot(), strings.Fields(bad)); err == nil {
			t.Errorf("normalizeArgs(%s) = %q; want it refused", bad, got)
		}
	}
}
