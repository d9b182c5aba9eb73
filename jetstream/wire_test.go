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
