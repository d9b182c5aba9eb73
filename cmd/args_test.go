package cmd

import (
	"slices"
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
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

func TestOnlyPrefix(t *testing.T) {
	ch := sharedconfig.Change{Revision: 3, Ops: []sharedconfig.Op{{Kind: "put", Key: "app.x"}, {Kind: "put", Key: "other"}, {Kind: "remove", Key: "app.y"}}}
	got, ok := onlyPrefix(ch, "app.")
	if !ok || len(got.Ops) != 2 || got.Ops[0].Key != "app.x" || got.Ops[1].Key != "app.y" {
		t.Errorf("onlyPrefix: %+v, %v", got, ok)
	}
	if _, ok := onlyPrefix(sharedconfig.Change{Ops: []sharedconfig.Op{{Kind: "put", Key: "other"}}}, "app."); ok {
		t.Error("a change to other keys passed")
	}
	for _, keep := range []sharedconfig.Change{{Ops: []sharedconfig.Op{{Kind: "clear"}}}, {Snapshot: true}, {Foreign: "why"}} {
		if _, ok := onlyPrefix(keep, "app."); !ok {
			t.Errorf("%+v was dropped", keep)
		}
	}
}

func TestShownQuotesWhatCouldDriveATerminal(t *testing.T) {
	for in, want := range map[string]string{"plain text": "plain text", "a\x1b]0;x\a": `"a\x1b]0;x\a"`, "\u202eevil": `"\u202eevil"`, "bad\xff": `"bad\xff"`} {
		if got := shown(in); got != want {
			t.Errorf("shown(%q) = %s, want %s", in, got, want)
		}
	}
}
