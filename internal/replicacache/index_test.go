package replicacache_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
)

// checkpointHead is how a statesync checkpoint starts.
const checkpointHead = "statesync-checkpoint 1\n{\"revision\":9,\"id\":\"X\",\"time\":\"2026-12-01T10:00:00.123456789Z\"}\n"

// leasedCheckpoint holds keys a (under lease L), b and c, and lease L.
const leasedCheckpoint = checkpointHead + `{"properties":{"a":"1","b":"2","c":"3"},"revisions":{"a":4,"b":5,"c":6},` +
	`"leases":{"L":{"holder":"h","registration":3,"ttl_ms":10000,"deadline":"2026-12-01T10:00:00Z","watched":true}},"lease_of":{"a":"L"}}`

var leasedProps = []replicacache.Property{{Key: "a", Value: "1", Revision: 4, Lease: "L"}, {Key: "b", Value: "2", Revision: 5}, {Key: "c", Value: "3", Revision: 6}}

func savedWithIndex(t testing.TB) (path string, index []byte) {
	t.Helper()
	index, err := replicacache.NewIndex([]byte(leasedCheckpoint), slices.Values(leasedProps), []string{"L"})
	if err != nil {
		t.Fatal(err)
	}
	path = replicacache.Path(filepath.Join(t.TempDir(), "sharedconfig"), stamp)
	if err := replicacache.Save(path, stamp, 9, []byte(leasedCheckpoint), index); err != nil {
		t.Fatal(err)
	}
	return path, index
}

// A lookup gives a checkpoint of the config holding the key alone, with
// its revision and lease, and every lease; Load still gives the whole one.
func TestLookupGivesTheKeyAlone(t *testing.T) {
	path, _ := savedWithIndex(t)
	lease := `"leases":{"L":{"holder":"h","registration":3,"ttl_ms":10000,"deadline":"2026-12-01T10:00:00Z","watched":true}}`
	for key, want := range map[string]string{
		"a":    `{"properties":{"a":"1"},"revisions":{"a":4},` + lease + `,"lease_of":{"a":"L"}}`,
		"c":    `{"properties":{"c":"3"},"revisions":{"c":6},` + lease + `,"lease_of":{}}`,
		"bb":   `{"properties":{},"revisions":{},` + lease + `,"lease_of":{}}`,
		"\x00": `{"properties":{},"revisions":{},` + lease + `,"lease_of":{}}`,
	} {
		got, rev, err := replicacache.Lookup(path, stamp, key)
		if err != nil || rev != 9 || string(got) != checkpointHead+want {
			t.Errorf("Lookup %q: %s at %d, %v; want %s", key, got, rev, err, want)
		}
	}
	if got, rev, err := replicacache.Load(path, stamp); err != nil || rev != 9 || string(got) != leasedCheckpoint {
		t.Errorf("Load: %s at %d, %v", got, rev, err)
	}
	plain := checkpointHead + `{"properties":{"b":"2"},"revisions":{"b":5}}`
	index, err := replicacache.NewIndex([]byte(plain), slices.Values(leasedProps[1:2]), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := replicacache.Save(path, stamp, 9, []byte(plain), index); err != nil {
		t.Fatal(err)
	}
	if got, _, err := replicacache.Lookup(path, stamp, "b"); err != nil || string(got) != plain {
		t.Errorf("Lookup b without leases: %s, %v; want %s", got, err, plain)
	}
}

// An index is not built from what does not agree with the state it is
// given, and a file without one says so.
func TestIndexOfTheWrongThingIsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		checkpoint string
		props      []replicacache.Property
		leases     []string
	}{
		"not a checkpoint":     {"garbage", leasedProps, []string{"L"}},
		"not a snapshot":       {checkpointHead + `[1,2]`, leasedProps, []string{"L"}},
		"keys out of order":    {leasedCheckpoint, []replicacache.Property{leasedProps[1], leasedProps[0]}, []string{"L"}},
		"an empty key":         {leasedCheckpoint, []replicacache.Property{{Key: ""}}, []string{"L"}},
		"leases not given":     {leasedCheckpoint, leasedProps, nil},
		"another lease":        {leasedCheckpoint, leasedProps, []string{"M"}},
		"more leases":          {leasedCheckpoint, leasedProps, []string{"L", "M"}},
		"leases not in it":     {checkpointHead + `{"properties":{},"revisions":{}}`, nil, []string{"L"}},
		"leases that are junk": {checkpointHead + `{"properties":{},"revisions":{},"leases":{"L":`, nil, []string{"L"}},
	} {
		if _, err := replicacache.NewIndex([]byte(c.checkpoint), slices.Values(c.props), c.leases); err == nil {
			t.Errorf("%s: NewIndex built an index", name)
		}
	}
	path := saved(t, "checkpoint")
	if _, _, err := replicacache.Lookup(path, stamp, "a"); !errors.Is(err, replicacache.ErrNoIndex) {
		t.Errorf("Lookup in a file without an index: %v, want ErrNoIndex", err)
	}
}

// A damaged index is refused, or, where the damage is in a record the
// search does not visit, gives the right answer: every byte changed, and
// every prefix of the file.
func TestDamagedIndexIsNotUsed(t *testing.T) {
	path, index := savedWithIndex(t)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := len(whole) - len(index)
	want := map[string][]byte{}
	for _, key := range []string{"a", "b", "c", "zz"} {
		want[key], _, _ = replicacache.Lookup(path, stamp, key)
	}
	write := func(b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := start; i < len(whole); i++ {
		b := bytes.Clone(whole)
		b[i] ^= 0x41
		write(b)
		for key, w := range want {
			got, _, err := replicacache.Lookup(path, stamp, key)
			if err == nil && !bytes.Equal(got, w) || err != nil && !errors.Is(err, replicacache.ErrUntrusted) {
				t.Fatalf("byte %d of the index changed: Lookup %q: %s, %v", i-start, key, got, err)
			}
		}
	}
	for i := range len(whole) {
		write(whole[:i])
		if got, _, err := replicacache.Lookup(path, stamp, "a"); !errors.Is(err, replicacache.ErrUntrusted) {
			t.Fatalf("the file cut to %d bytes: Lookup gave %q, %v; want ErrUntrusted", i, got, err)
		}
	}
}

// FuzzLookupIndex: no bytes in an index make a lookup panic, and what it
// gives is a checkpoint that starts as one.
func FuzzLookupIndex(f *testing.F) {
	_, index := savedWithIndex(f)
	f.Add(index, "a")
	f.Add(index, "b")
	f.Add(index[:len(index)/2], "c")
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0}, "a")
	f.Add([]byte{255, 255, 255, 255}, "")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		got, err := replicacache.LookUpIn(b, key)
		if err == nil && !bytes.Contains(got, []byte(`{"properties":{`)) {
			t.Fatalf("a lookup gave %q", got)
		}
	})
}

// An index as large as a config of many keys is looked up in.
func TestLookupInALargeIndex(t *testing.T) {
	const n = 5000
	var props []replicacache.Property
	var cp bytes.Buffer
	cp.WriteString(checkpointHead + `{"properties":{`)
	for i := range n {
		props = append(props, replicacache.Property{Key: fmt.Sprintf("k%05d", i), Value: fmt.Sprint("v", i), Revision: uint64(i + 1)})
	}
	cp.WriteString(`},"revisions":{}}`) // NewIndex reads only the leases from it
	index, err := replicacache.NewIndex(cp.Bytes(), slices.Values(props), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		got, err := replicacache.LookUpIn(index, props[i].Key)
		want := fmt.Sprintf(`{"properties":{"k%05d":"v%d"},"revisions":{"k%05d":%d}}`, i, i, i, i+1)
		if err != nil || !bytes.HasSuffix(got, []byte(want)) {
			t.Errorf("key %d: %s, %v; want %s", i, got, err, want)
		}
	}
}

// Peek gives a key's property and where the copy stands (its revision and
// the ID of the entry there), whatever the stream's creation time; another
// server's or stream's file, or a damaged one, is not used.
func TestPeekGivesThePropertyAndThePosition(t *testing.T) {
	path, _ := savedWithIndex(t)
	anyTime := stamp
	anyTime.Created = stamp.Created.Add(time.Hour)
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	for key, want := range map[string]replicacache.Peeked{
		"a":  {Property: leasedProps[0], Found: true, Revision: 9, ID: "X", Time: at},
		"c":  {Property: leasedProps[2], Found: true, Revision: 9, ID: "X", Time: at},
		"b0": {Revision: 9, ID: "X", Time: at},
	} {
		for _, s := range []replicacache.Stamp{stamp, anyTime} {
			if got, err := replicacache.Peek(path, s, key); err != nil || got != want {
				t.Errorf("Peek %q: %+v, %v; want %+v", key, got, err, want)
			}
		}
	}
	for _, other := range []replicacache.Stamp{{Server: "other", Stream: stamp.Stream}, {Server: stamp.Server, Stream: "OTHER"}} {
		if _, err := replicacache.Peek(path, other, "a"); !errors.Is(err, replicacache.ErrUntrusted) {
			t.Errorf("Peek with %+v: %v; want ErrUntrusted", other, err)
		}
	}
	data, _ := os.ReadFile(path)
	i := bytes.LastIndex(data, []byte(`"id":"X"`)) // in the index, after the checkpoint
	os.WriteFile(path, slices.Concat(data[:i], []byte(`"id":"Y"`), data[i+len(`"id":"X"`):]), 0o600)
	if got, err := replicacache.Peek(path, stamp, "a"); !errors.Is(err, replicacache.ErrUntrusted) {
		t.Errorf("Peek of a file whose index was changed: %+v, %v; want ErrUntrusted", got, err)
	}
}
