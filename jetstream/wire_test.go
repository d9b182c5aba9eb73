package jetstream

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The Sharedconfig-Carried header reads back as written, the name of a
// call's writer included, whatever bytes it holds; a header anyone could
// have forged that is not one reads as none.
func TestCarriedHeaderRoundTrips(t *testing.T) {
	carried := []statesync.Carried{
		{ID: "0123456789abcdef", Start: 0, End: 1},
		{ID: "fedcba9876543210", Start: 1, End: 3, Writer: "bob, the: builder\u202e"},
	}
	if got := parseCarried(carriedHeader(carried)); !slices.Equal(got, carried) {
		t.Fatalf("parseCarried(carriedHeader(%v)) = %v", carried, got)
	}
	for _, forged := range []string{
		"id:0:1:not base64!",
		"id:0:1:" + base64.RawURLEncoding.EncodeToString([]byte{0xff, 0xfe}),
		"id:0:1:" + base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("x", maxCarriedWriter+1))),
		"id:0:1:a:b",
		"id:2:1",
	} {
		if got := parseCarried(forged); got != nil {
			t.Errorf("parseCarried(%q) = %v; want none", forged, got)
		}
	}
}

// FuzzParseCarried: a header anyone may have forged never panics the
// reader; what it reads names only calls with IDs and spans it can hold,
// and writes back to a header that reads the same.
func FuzzParseCarried(f *testing.F) {
	f.Add("0123456789abcdef:0:1")
	f.Add("0123456789abcdef:0:1,fedcba9876543210:1:3:Ym9i")
	f.Add("id:2:1")
	f.Add(",,,")
	f.Fuzz(func(t *testing.T, v string) {
		got := parseCarried(v)
		if len(got) > maxCarriedRead {
			t.Fatalf("%q: %d calls read, past %d", v, len(got), maxCarriedRead)
		}
		for _, c := range got {
			if c.ID == "" || c.Start < 0 || c.Start > c.End {
				t.Fatalf("%q: read %+v", v, c)
			}
		}
		if got == nil {
			return
		}
		if again := parseCarried(carriedHeader(got)); !slices.Equal(again, got) {
			t.Fatalf("%q read as %v, written as %q, read back as %v", v, got, carriedHeader(got), again)
		}
	})
}
