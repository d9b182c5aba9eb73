package repl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
)

func TestDescribeLeaseChanges(t *testing.T) {
	for _, c := range []struct {
		ch       sharedconfig.Change
		op, args string
	}{
		{sharedconfig.Change{Ops: []sharedconfig.Op{{Kind: "register_lease", Lease: "L", Holder: "h", TTL: 10 * time.Second}}}, "REGISTER_LEASE", "L , 10s held by h"},
		{sharedconfig.Change{Ops: []sharedconfig.Op{{Kind: "put", Key: "k", Value: "v", Lease: "L"}}}, "PUT_WITH_LEASE", "k , v , L"},
		{sharedconfig.Change{Ops: []sharedconfig.Op{{Kind: "put", Key: "k", Value: "v"}}}, "PUT", "k , v"},
		// A PUT another writer handed over (combining) names it, escaped.
		{sharedconfig.Change{Ops: []sharedconfig.Op{{Kind: "put", Key: "k", Value: "v", HandedBy: "bob\x1b[2J"}}}, "PUT", `k , v (handed by "bob\x1b[2J")`},
		{sharedconfig.Change{Ops: []sharedconfig.Op{{Kind: "expire_lease", Lease: "a, b"}}}, "EXPIRE_LEASE", `"a, b"`},
	} {
		if op, args := describeChange(c.ch); op != c.op || args != c.args {
			t.Errorf("describeChange(%+v) = %q %q, want %q %q", c.ch.Ops, op, args, c.op, c.args)
		}
	}
}

// Follow mode leaves out refreshes and expiries that were not due, and
// shows an expiry this shell's keeper wrote.
func TestFollowShowsExpiriesNotRefreshes(t *testing.T) {
	var out bytes.Buffer
	sh := New(Options{Scope: "s", Name: "c", Out: &out})
	refresh := sharedconfig.Change{Revision: 5, Writer: "w", Ops: []sharedconfig.Op{{Kind: "refresh_lease", Lease: "L", Holder: "w"}}}
	early := sharedconfig.Change{Revision: 6, Writer: "w", Ops: []sharedconfig.Op{{Kind: "expire_lease", Lease: "L"}}}
	expired := early
	expired.Revision, expired.Local = 7, true
	expired.Ended = []lease.Ended{{Name: "L", Keys: []string{"/servers/1"}, Expired: true}}
	for _, ch := range []sharedconfig.Change{refresh, early, expired} {
		sh.heard(ch, "")
	}
	if got, want := out.String(), ">>>> revision 7 by w: EXPIRE_LEASE L -- lease L expired, removing /servers/1\n"; got != want {
		t.Fatalf("follow printed %q, want %q", got, want)
	}
}

func TestLeaseWarningAsJSON(t *testing.T) {
	var out bytes.Buffer
	sh := New(Options{Out: &out, JSON: true})
	sh.leaseWarning("Lease 'L' could not be refreshed")
	if got := out.String(); !strings.Contains(got, `{"event":"lease_warning","message":"Lease 'L' could not be refreshed"}`) {
		t.Fatalf("got %s", got)
	}
}

// Under combining one entry may hold this shell's PUTs and others': follow
// mode shows the others' alone, from this shell's entry as from another's.
func TestFollowShowsOthersPutsOfACombinedEntry(t *testing.T) {
	var out bytes.Buffer
	sh := New(Options{Scope: "s", Name: "c", Out: &out})
	mine := sharedconfig.Op{Kind: "put", Key: "a", Value: "1", Local: true}
	theirs := sharedconfig.Op{Kind: "put", Key: "b", Value: "2", HandedBy: "bob"}
	for _, ch := range []sharedconfig.Change{
		{Revision: 5, Local: true, Ops: []sharedconfig.Op{mine, theirs}}, // this shell's, carrying bob's
		{Revision: 6, Writer: "carol", Ops: []sharedconfig.Op{mine}},     // carol's, carrying this shell's
		{Revision: 7, Writer: "carol", Ops: []sharedconfig.Op{theirs, mine}},
	} {
		sh.heard(ch, "")
	}
	want := ">>>> revision 5: PUT b , 2 (handed by bob)\n>>>> revision 7 by carol: PUT b , 2 (handed by bob)\n"
	if got := out.String(); got != want {
		t.Fatalf("follow printed %q, want %q", got, want)
	}
}
