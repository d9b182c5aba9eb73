package sharedconfig_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// An import is one entry: it lands whole, after catching up with a writer
// that got in first, and with replace it removes what the file lacks.
func TestImportIsOneUpdate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, b := e.open(sharedconfig.Options{}), e.open(sharedconfig.Options{})
	put(t, a, "keep", "1")
	put(t, a, "drop", "2")
	put(t, b, "late", "3") // a's copy is now stale: its import conflicts once
	before := must[uint64](t)(a.Log().LastRevision(ctx))
	props := map[string]string{"keep": "1", "new": "x, y", "late": "changed"}
	r, err := a.Import(ctx, props, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (sharedconfig.ImportResult{Added: 1, Updated: 1, Unchanged: 1, Removed: 1}); r != want {
		t.Fatalf("Import: %+v, want %+v", r, want)
	}
	if after := must[uint64](t)(a.Log().LastRevision(ctx)); after != before+1 {
		t.Fatalf("the import took revisions %d to %d: want one entry", before+1, after)
	}
	if got := contents(a); !maps.Equal(got, props) {
		t.Fatalf("after the import: %v, want %v", got, props)
	}
	// Nothing to change: nothing written.
	if _, err := a.Import(ctx, props, true); err != nil {
		t.Fatal(err)
	}
	if after := must[uint64](t)(a.Log().LastRevision(ctx)); after != before+1 {
		t.Fatalf("an import that changes nothing wrote revision %d", after)
	}
}

// Export's file reads back as the same keys and values; a plain object of
// strings reads too; anything else is refused.
func TestExportReadsBack(t *testing.T) {
	e := newEnv(t)
	c := e.open(sharedconfig.Options{})
	put(t, c, "a", "1")
	put(t, c, "b, c", "\"quoted\"")
	data, err := json.Marshal(c.Export("test", e.name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := sharedconfig.ParseImport(data)
	if err != nil || !maps.Equal(got, contents(c)) {
		t.Fatalf("ParseImport(Export): %v, %v; want %v", got, err, contents(c))
	}
	if got, err := sharedconfig.ParseImport([]byte(`{"format": "sharedconfig-export/1", "properties": {}}`)); err != nil || len(got) != 0 {
		t.Fatalf("an export of an empty config: %v, %v", got, err)
	}
	if got, err := sharedconfig.ParseImport([]byte("\ufeff{\"k\": \"v\"}")); err != nil || !maps.Equal(got, map[string]string{"k": "v"}) {
		t.Fatalf("a file starting with a byte order mark: %v, %v", got, err)
	}
	got, err = sharedconfig.ParseImport([]byte(`{"format": "mine", "x": "y"}`))
	if err != nil || !maps.Equal(got, map[string]string{"format": "mine", "x": "y"}) {
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
		if got, err := sharedconfig.ParseImport([]byte(bad)); err == nil {
			t.Errorf("ParseImport(%s) = %v; want an error", bad, got)
		}
	}
}
