package repl

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		line string
		want Line
		err  bool
	}{
		{"", Line{}, false},
		{"   ", Line{}, false},
		{"GET_ALL", Line{Word: "GET_ALL"}, false},
		{"get p1", Line{Word: "get", Args: []string{"p1"}}, false},
		{"PUT p1,v1", Line{Word: "PUT", Args: []string{"p1", "v1"}}, false},
		{"  PUT  my key , my value  ", Line{Word: "PUT", Args: []string{"my key", "my value"}}, false},
		{"PUT k v", Line{Word: "PUT", Args: []string{"k v"}}, false},
		{"PUT k,", Line{Word: "PUT", Args: []string{"k"}}, false},
		{"GET k,,", Line{Word: "GET", Args: []string{"k"}}, false},
		{"PUT k,,v", Line{Word: "PUT", Args: []string{"k", "", "v"}}, false},
		{"GET ,", Line{Word: "GET", Args: []string{""}}, false},
		{"PUT,a,b", Line{Word: "PUT,a,b"}, false},
		{"PUT\ta,b", Line{Word: "PUT", Args: []string{"a", "b"}}, false},
		{`PUT a"b,c`, Line{Word: "PUT", Args: []string{`a"b`, "c"}}, false},
		// Quoting, the one addition.
		{`PUT "a, b", "c"`, Line{Word: "PUT", Args: []string{"a, b", "c"}}, false},
		{`PUT k, "say \"hi\""`, Line{Word: "PUT", Args: []string{"k", `say "hi"`}}, false},
		{`PUT k, "  padded "`, Line{Word: "PUT", Args: []string{"k", "  padded "}}, false},
		{`PUT k, ""`, Line{Word: "PUT", Args: []string{"k", ""}}, false},
		{`PUT "k`, Line{}, true},
		{`PUT "k" x, v`, Line{}, true},
		{`PUT "\q", v`, Line{}, true},
	}
	for _, c := range cases {
		got, err := Parse(c.line)
		if (err != nil) != c.err {
			t.Errorf("Parse(%q) error = %v, want error %v", c.line, err, c.err)
			continue
		}
		if !c.err && !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", c.line, got, c.want)
		}
	}
}

func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"plain", "with space", "a,b", `q"uote`, " lead", "", "tab\t", "new\nline", "ünï", "\x1b]0;t\a", "\u202eab", "a\x00b\x7f", "\u0085", "\u2028"} {
		if !printable(Quote(s)) {
			t.Errorf("Quote(%q) = %q, not printable", s, Quote(s))
		}
		line, err := Parse("PUT " + Quote(s) + ", v")
		if err != nil || len(line.Args) != 2 || line.Args[0] != s {
			t.Errorf("Quote(%q) = %s reads back as %#v, %v", s, Quote(s), line.Args, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"PUT a,b", `PUT "a,b", "c\"d"`, "GET ,", `REPLACE k, "`, "x \"\\", "\xff,\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		parsed, err := Parse(line)
		if err != nil {
			return
		}
		// Whatever parses must survive a round trip through Quote.
		if parsed.Word == "" || len(parsed.Args) == 0 {
			return
		}
		var quoted []string
		for _, a := range parsed.Args {
			quoted = append(quoted, Quote(a))
		}
		again, err := Parse(parsed.Word + " " + strings.Join(quoted, ", "))
		if err != nil || !reflect.DeepEqual(again.Args, parsed.Args) {
			t.Fatalf("%q parsed to %q, which quotes back to %q: %v", line, parsed.Args, again.Args, err)
		}
	})
}

// What a stream holds is shown quoted where a terminal would obey it (the
// one-shot commands outside the shell use it through Shown).
func TestShownQuotesWhatCouldDriveATerminal(t *testing.T) {
	for in, want := range map[string]string{"plain text": "plain text", "a\x1b]0;x\a": `"a\x1b]0;x\a"`, "\u202eevil": `"\u202eevil"`, "bad\xff": `"bad\xff"`} {
		if got := shown(in); got != want {
			t.Errorf("shown(%q) = %s, want %s", in, got, want)
		}
	}
}
