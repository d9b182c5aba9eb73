package exportfile_test

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/exportfile"
)

// A file New writes reads back as the same keys and values; a plain object
// of strings reads too; anything else is refused.
func TestParse(t *testing.T) {
	state := sharedconfig.State{}.Set("a", "1", 3).Set("b, c", `"quoted"`, 4)
	data, err := json.Marshal(exportfile.New("test", "app", state))
	if err != nil {
		t.Fatal(err)
	}
	if file, err := exportfile.Parse(data); err != nil || !maps.Equal(file.Props, map[string]string{"a": "1", "b, c": `"quoted"`}) || len(file.Leased) != 0 {
		t.Fatalf("Parse(New): %v, %v", file, err)
	}
	if got, err := exportfile.Parse([]byte(`{"format": "sharedconfig-export/1", "properties": {}}`)); err != nil || len(got.Props) != 0 {
		t.Fatalf("an export of an empty config: %v, %v", got, err)
	}
	if got, err := exportfile.Parse([]byte("\ufeff{\"k\": \"v\"}")); err != nil || !maps.Equal(got.Props, map[string]string{"k": "v"}) {
		t.Fatalf("a file starting with a byte order mark: %v, %v", got, err)
	}
	if got, err := exportfile.Parse([]byte(`{"format": "mine", "x": "y"}`)); err != nil || !maps.Equal(got.Props, map[string]string{"format": "mine", "x": "y"}) {
		t.Fatalf("a plain object: %v, %v", got, err)
	}
	for _, bad := range []string{`[]`, `{"a": 1}`, `{"a": null}`, `{"format": "sharedconfig-export/1", "properties": {"a": "v"}}`, `nope`,
		// Each of these would import something the file does not say: a
		// value lost to its twin, bytes replaced, an empty key, or (with
		// --replace) an emptied config.
		`{"a": "1", "a": "2"}`, `{5: "x"}`, `{"a"}`, `{"a": }`, `{`, "{\"a\": \"\xff\"}", `{"": "x"}`, `null`, `{"a": "b"} {"c": "d"}`,
		`{"format": "sharedconfig-export/1", "properties": null}`,
		`{"format": "sharedconfig-export/1"}`,
		`{"format": "sharedconfig-export/1", "properties": {"a": {"value": "1"}, "a": {"value": "2"}}}`,
		`{"format": "sharedconfig-export/1", "properties": {"": {"value": "1"}}}`,
	} {
		if got, err := exportfile.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) = %v; want an error", bad, got)
		}
	}
}

// Names in an export file are exact and given once: encoding/json would
// take "Value" for "value" and keep the last of twins, importing what a
// reviewer of the file does not see. Each is refused, naming it and its line.
func TestParseRefusesWhatReviewersCannotSee(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"format":"sharedconfig-export/1","properties":{"db":{"value":"postgres://good","Value":"postgres://evil"}}}`, `line 1: "Value" is not a field`},
		{"{\"format\":\"sharedconfig-export/1\",\n\"properties\":{\"a\":{\"value\":\"1\"}},\n\"PROPERTIES\":{\"b\":{\"value\":\"2\"}}}", `line 3: "PROPERTIES" is not a field`},
		{`{"format":"sharedconfig-export/1","properties":{"k":{"value":"v","lease":"L","LEASE":""}}}`, `"LEASE" is not a field`},
		{"{\"format\":\"sharedconfig-export/1\",\"properties\":{\n\"k\":{\"value\":\"v\",\n\"value\":\"w\"}}}", `line 3: "value" is given twice`},
		{"{\"a\": \"1\",\n\"a\": \"2\"}", `line 2: "a" is given twice`},
	} {
		if got, err := exportfile.Parse([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, %v; want an error with %q", c.in, got, err, c.want)
		}
	}
}

// Half of a UTF-16 surrogate pair alone is no character: encoding/json
// would read U+FFFD in its place. Parse refuses it wherever an import
// would take it (a key, a value, an export's property or lease name),
// naming the key as the file writes it; a whole pair, and a \u after an
// escaped backslash (text, not an escape), read as written.
func TestParseRefusesLoneSurrogates(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"k": "\ud800"}`, `key "k": the file writes \ud800,`},
		{`{"k": "a\udc00"}`, `key "k": the file writes \udc00,`},
		{`{"k": "\ud800\ud800"}`, `key "k": the file writes \ud800,`},
		{`{"k": "\udc00\ud800"}`, `key "k": the file writes \udc00,`},
		{`{"k": "\ud800x\udc00"}`, `key "k": the file writes \ud800,`},
		{`{"k": "\ud83d\ude00\ud800"}`, `key "k": the file writes \ud800,`},
		{`{"k": "\\\ud800"}`, `key "k": the file writes \ud800,`},
		{`{"k": "\uD800"}`, `key "k": the file writes \uD800,`},
		{`{"ok": "1", "x\udfff": "v"}`, `key "x\udfff": the file writes \udfff,`},
		{"{\"\u202e\\ud800\": \"v\"}", `key "\u202e\ud800": the file writes \ud800,`},
		{`{"format": "sharedconfig-export/1", "properties": {"db": {"value": "\udbff", "revision": 3}}}`, `key "db": the file writes \udbff,`},
		{`{"format": "sharedconfig-export/1", "properties": {"db": {"value": "v", "revision": 3, "lease": "L\ud800"}}}`, `key "db": the file writes \ud800,`},
	} {
		_, err := exportfile.Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, sharedconfig.ErrNotUTF8) {
			t.Errorf("Parse(%s) = %v; want ErrNotUTF8 with %q", c.in, err, c.want)
		}
	}
	for in, want := range map[string]string{
		`{"k": "\ud83d\ude00"}`:     "😀",
		`{"k": "\\ud800"}`:          `\ud800`,
		`{"k": "\\\\\ud83d\ude00"}`: `\\😀`,
		`{"k": "\u0041\uffff"}`:     "A\uffff",
	} {
		if got, err := exportfile.Parse([]byte(in)); err != nil || got.Props["k"] != want {
			t.Errorf("Parse(%s) = %q, %v; want %q", in, got.Props["k"], err, want)
		}
	}
}

// Every file import cannot take is refused in one line that says what is
// wrong and where, in the file's terms: nested millions deep (followed
// down, the process would die of a stack overflow), cut short, of an
// export format this program does not read, or holding a value of the
// wrong kind.
func TestParseSaysWhatIsWrongInOneLine(t *testing.T) {
	deepExport := `{"format": "sharedconfig-export/1", "properties": {"k": {"value": "v", "x": ` + strings.Repeat("[", 8<<20)
	for _, c := range []struct{ in, want string }{
		{`{"k": ` + strings.Repeat("[", 8<<20), "line 1: nested more than 10000 deep"},
		{`{"k": ` + strings.Repeat("[", 8<<20) + strings.Repeat("]", 8<<20) + "}", "line 1: nested more than 10000 deep"},
		{strings.Repeat(`{"a":`, 3<<20), "line 1: nested more than 10000 deep"},
		{deepExport, "line 1: nested more than 10000 deep"},
		{"{\"k\": \"v\",\n\"é\": \"\xc3", "the file ends in the middle of a character at line 2 (a file cut short?)"},
		{"{\"k\": \"v\xff\"}", "line 1 holds the byte 0xff, which starts no UTF-8 character"},
		{`{"format": "sharedconfig-export/2", "properties": {"k": {"value": "v"}}}`, `a file of format "sharedconfig-export/2", which this program does not read (it reads sharedconfig-export/1)`},
		{"{\"format\": \"sharedconfig-export/1\",\n\"properties\": {\"k\": {\"value\": 5}}}", `line 2: "properties.value" holds a number, where a string belongs`},
		{`{"format": "sharedconfig-export/1", "properties": {"k": {"value": "v", "revision": -1}}}`, `"properties.revision" holds -1, where a whole number`},
		{`{"format": "sharedconfig-export/1", "properties": {"k": {"value": "v", "revision": 1e400}}}`, `the number 1e400 is out of range`},
		{`{"format": "sharedconfig-export/1", "exported": "yesterday", "properties": {}}`, `"yesterday" is not a time as export writes one`},
		{`{"format": "sharedconfig-export/1", "properties": {"k": "v"}}`, `"properties" holds a string, where an object belongs`},
	} {
		show := c.in[:min(len(c.in), 60)]
		got, err := exportfile.Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "Go ") {
			t.Errorf("Parse(%q... of %d bytes) = %v, %v; want one line with %q", show, len(c.in), got, err, c.want)
		}
	}
}

// FuzzParse: no file makes Parse panic, and what it accepts holds only
// UTF-8 keys, none of them empty.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"k": "v"}`))
	f.Add([]byte(`{"format": "sharedconfig-export/1", "properties": {"a": {"value": "1", "revision": 3}}}`))
	f.Add([]byte(`{"format": "sharedconfig-export/9"}`))
	f.Add([]byte("\ufeff{\"k\": \"v\", \"k\": \"w\"}"))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := exportfile.Parse(data)
		if err != nil {
			return
		}
		for k, v := range got.Props {
			if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Fatalf("%q: accepted the property %q = %q", data, k, v)
			}
		}
	})
}
