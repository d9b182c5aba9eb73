package strictjson_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
)

type property struct {
	Value string `json:"value"`
	Lease string `json:"lease,omitempty"`
}

type file struct {
	Format     string              `json:"format"`
	When       time.Time           `json:"when"`
	Properties map[string]property `json:"properties"`
}

type base struct {
	URL string `json:"url"`
}

type context struct {
	base
	Token string `json:"token"`
}

func TestRefusesWhatEncodingJSONReadsSilently(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"properties": {"db": {"value":"postgres://good","Value":"postgres://evil"}}}`, `line 1: "Value" is not a field (did you mean "value"? names are exact)`},
		{"{\"properties\": {},\n\"PROPERTIES\": {\"k\": {\"value\": \"v\"}}}", `line 2: "PROPERTIES" is not a field (did you mean "properties"?`},
		{`{"properties": {"k": {"value": "v", "lease":"L","LEASE":""}}}`, `"LEASE" is not a field`},
		{"{\n  \"format\": \"a\",\n  \"format\": \"b\"\n}", `line 3: "format" is given twice`},
		{"{\"properties\": {\n\"k\": {\"value\": \"1\"},\n\"k\": {\"value\": \"2\"}}}", `line 3: "k" is given twice`},
		{`{"properties": {"k": {"value": "v", "value": "w"}}}`, `"value" is given twice`},
		{`{"other": 1}`, `line 1: "other" is not a field`},
		{"{\n\"format\": \"a\",\n\"properties\": {\n", `unexpected end of the JSON text at line 3`},
		{`{"format": "a"} {}`, `more follows the JSON value`},
		{"{\"format\": \"\xff\"}", `not UTF-8`},
	} {
		var f file
		err := strictjson.Unmarshal([]byte(c.in), &f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Unmarshal(%s) = %v; want an error with %q", c.in, err, c.want)
		}
	}
}

func TestReadsWhatIsExact(t *testing.T) {
	var f file
	in := `{"format": "x", "when": "2026-12-01T00:00:00Z", "properties": {"Value": {"value": "v", "lease": "L"}, "value": {"value": "w"}}}`
	if err := strictjson.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	if f.Format != "x" || f.Properties["Value"] != (property{"v", "L"}) || f.Properties["value"].Value != "w" || f.When.IsZero() {
		t.Fatalf("got %+v", f)
	}
}

func TestIgnoringUnknownKeepsNamesExact(t *testing.T) {
	var c context
	if err := strictjson.UnmarshalIgnoringUnknown([]byte(`{"url": "nats://a", "description": "mine", "token": "t"}`), &c); err != nil || c.URL != "nats://a" || c.Token != "t" {
		t.Fatalf("got %+v, %v", c, err)
	}
	for _, in := range []string{`{"url": "nats://good", "URL": "nats://evil"}`, `{"Token": "x"}`, `{"url": "a", "url": "b"}`} {
		var c context
		if err := strictjson.UnmarshalIgnoringUnknown([]byte(in), &c); err == nil {
			t.Errorf("UnmarshalIgnoringUnknown(%s) = %+v; want an error", in, c)
		}
	}
}

func TestCheckDuplicates(t *testing.T) {
	if err := strictjson.CheckDuplicates([]byte(`{"a": "1", "A": "2", "b": [{"x": 1}, {"x": 2}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := strictjson.CheckDuplicates([]byte("{\"b\": [{\"x\": 1,\n\"x\": 2}]}")); err == nil || !strings.Contains(err.Error(), `line 2: "x" is given twice`) {
		t.Fatalf("got %v", err)
	}
}

// Twins in an object decoded into a map are found however they are
// spelled, and however many members the object has.
func TestTwinsInMaps(t *testing.T) {
	many := ""
	for i := range 100 {
		many += `"k` + strings.Repeat("z", i) + `": "v",`
	}
	for _, c := range []struct{ in, want string }{
		{`{"a": "1", "b": "2", "a": "3"}`, `line 1: "a" is given twice`},
		{"{\"a\": \"1\",\n\"\\u0061\": \"2\"}", `line 2: "a" is given twice`},
		{"{" + many + "\n\"kzz\": \"again\"}", `line 2: "kzz" is given twice`},
	} {
		var m map[string]string
		if err := strictjson.Unmarshal([]byte(c.in), &m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Unmarshal(%.40s...) = %v; want an error with %q", c.in, err, c.want)
		}
	}
	var m map[string]string
	if err := strictjson.Unmarshal([]byte("{"+strings.TrimSuffix(many, ",")+"}"), &m); err != nil || len(m) != 100 {
		t.Fatalf("100 distinct members: %d, %v", len(m), err)
	}
	if err := strictjson.CheckDuplicates([]byte("{" + many + "\n\"kzz\": \"again\"}")); err == nil || !strings.Contains(err.Error(), `line 2: "kzz" is given twice`) {
		t.Fatalf("CheckDuplicates of 101 members with a twin: %v", err)
	}
}

// Text nested deeper than encoding/json reads is refused in one error,
// without following it down: followed, a file of "[" alone, millions deep,
// would take the checker's stack past Go's limit, which kills the process.
func TestRefusesNestingDeeperThanJSONReads(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"format": "x", "properties": ` + strings.Repeat(`{"k":`, 10001) + "1" + strings.Repeat("}", 10002),
		strings.Repeat("[", 4<<20),
		strings.Repeat(`{"a":`, 3<<20),
	} {
		show := in[:20]
		if err := strictjson.CheckDuplicates([]byte(in)); err == nil || !strings.Contains(err.Error(), "nested more than 10000 deep") {
			t.Errorf("CheckDuplicates(%s... of %d bytes) = %v; want it refused as nested too deep", show, len(in), err)
		}
		var f file
		if err := strictjson.Unmarshal([]byte(in), &f); err == nil {
			t.Errorf("Unmarshal(%s... of %d bytes) read it", show, len(in))
		}
	}
	ok := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	if err := strictjson.CheckDuplicates([]byte(ok)); err != nil {
		t.Errorf("CheckDuplicates of arrays 9999 deep = %v; want nil, as encoding/json reads them", err)
	}
}
