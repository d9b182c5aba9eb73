package sharedconfig

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
)

// leasesByName is s's leases by name.
func leasesByName(s State) map[string]leaseRecord {
	m := map[string]leaseRecord{}
	for name, l := range s.leaseRecords() {
		m[name] = l
	}
	return m
}

// sameState: a and b hold the same properties and leases.
func sameState(a, b State) bool {
	return maps.Equal(collect(a), collect(b)) && maps.EqualFunc(leasesByName(a), leasesByName(b), func(x, y leaseRecord) bool {
		return x.Holder == y.Holder && x.Registration == y.Registration && x.TTL == y.TTL && x.Deadline.Equal(y.Deadline) && x.watched == y.watched
	})
}

// snapshotSeeds are snapshots as EncodeInitial writes them: plain, with
// keys that need escapes, and with leases.
func snapshotSeeds(t testing.TB) [][]byte {
	plain := State{}
	for i := range 50 {
		plain = plain.Set(fmt.Sprintf("k%03d", i), fmt.Sprint("v", i), uint64(i+2))
	}
	escaped := plain.Set("a\"b", "<\u00e9>\n", 60).Set("\u00e9t\u00e9", "x\\y", 61)
	leased := plain.setLease("L", leaseRecord{Lease: lease.Lease{Holder: "h", Registration: 7, TTL: 10 * time.Second, Deadline: time.Date(2026, 12, 1, 0, 0, 10, 0, time.UTC)}, watched: true})
	leased = putWithLease{Key: "k001", Value: "held", Lease: "L"}.Apply(leased, 70)
	var seeds [][]byte
	for _, s := range []State{{}, plain, escaped, leased} {
		data, err := codec{}.EncodeInitial(snapshotUpdate{s})
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// The fast path takes what EncodeInitial writes (but escapes), leases
// included, and decodes it as the strict decoder does.
func TestCanonicalSnapshotIsTheFastPath(t *testing.T) {
	for i, data := range snapshotSeeds(t) {
		fast, ok := decodeCanonicalSnapshot(data)
		if !ok && i != 2 { // the third has escapes
			t.Errorf("the fast path refused %.80s", data)
			continue
		}
		strict, err := decodeSnapshotStrict(data)
		if err != nil {
			t.Fatal(err)
		}
		if ok && !sameState(fast.Create(1), strict.Create(1)) {
			t.Errorf("%.80s: the fast path and the strict decoder disagree", data)
		}
	}
}

// FuzzCanonicalSnapshot: whenever the fast path accepts a snapshot, the
// strict decoder accepts it too and decodes the same state.
func FuzzCanonicalSnapshot(f *testing.F) {
	for _, s := range snapshotSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"properties":{"b":"1","a":"2"},"revisions":{"b":1,"a":2}}`))
	f.Add([]byte(`{"properties":{"a":"1","a":"2"},"revisions":{"a":1,"a":2}}`))
	f.Add([]byte(`{"properties":{"a":"1"},"revisions":{"a":0}}`))
	f.Add([]byte(`{"properties":{"a":"1"},"revisions":{"a":1},"lease_of":{"a":"L"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeCanonicalSnapshot(data)
		if !ok {
			return
		}
		strict, err := decodeSnapshotStrict(data)
		if err != nil {
			t.Fatalf("%q: the fast path took it, the strict decoder refused it: %v", data, err)
		}
		if !sameState(fast.Create(1), strict.Create(1)) {
			t.Fatalf("%q: the fast path and the strict decoder disagree", data)
		}
	})
}
