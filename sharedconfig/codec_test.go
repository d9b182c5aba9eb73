package sharedconfig

import (
	"errors"
	"maps"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

func TestCodecRoundTrip(t *testing.T) {
	updates := []statesync.Update[State]{putUpdate{"k", "v"}, putUpdate{"a\"b", "<\u00e9>\n"}, removeUpdate{"k"}, clearUpdate{}, putUpdate{"k", ""}}
	data, err := codec{}.EncodeUpdates(updates)
	if err != nil {
		t.Fatal(err)
	}
	got, err := codec{}.DecodeUpdates(data)
	if err != nil || !reflect.DeepEqual(got, updates) {
		t.Fatalf("round trip of %s = %#v, %v", data, got, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, bad := range []string{
		``, `{}`, `{"ops":[]}`, `{"ops":[{"op":"put","key":"k"}]}`, `{"ops":[{"op":"put","key":"k","value":"v","x":1}]}`,
		`{"ops":[{"op":"remove","key":"k","value":"v"}]}`, `{"ops":[{"op":"clear","key":"k"}]}`, `{"ops":[{"op":"drop"}]}`,
		`{"ops":[{"op":"clear"}]} trailing`, "{\"ops\":[{\"op\":\"put\",\"key\":\"\xff\",\"value\":\"v\"}]}",
		`{"ops":[{"op":"clear"}],"extra":true}`, `[1,2]`,
		// No command can write an empty key, nor read, replace or remove one.
		`{"ops":[{"op":"put","key":"","value":"v"}]}`, `{"ops":[{"op":"remove","key":""}]}`,
		`{"ops":[{"op":"put","key":"","value":"v","lease":"L"}]}`,
		// A ttl Register refuses: too short for any keeper to see it fall
		// due (each would witness it for ever), or past what a
		// time.Duration holds.
		`{"ops":[{"op":"register_lease","lease":"L","holder":"h","ttl_ms":1}]}`,
		`{"ops":[{"op":"register_lease","lease":"L","holder":"h","ttl_ms":9223372036854776}]}`,
		`{"ops":[{"op":"register_lease","lease":"L","holder":"h","ttl_ms":86400001}]}`,
	} {
		if us, err := (codec{}).DecodeUpdates([]byte(bad)); err == nil {
			t.Errorf("DecodeUpdates(%q) = %#v, want an error", bad, us)
		}
	}
	if init, err := (codec{}).DecodeInitial([]byte(`{"properties":{"":"v"}}`)); err == nil {
		t.Errorf("DecodeInitial of a snapshot with an empty key = %#v, want an error", init)
	}
	for _, ttl := range []string{"1", "999", "9223372036854776"} {
		snap := `{"properties":{},"leases":{"L":{"holder":"h","ttl_ms":` + ttl + `,"deadline":"2026-11-30T05:00:10Z"}}}`
		if init, err := (codec{}).DecodeInitial([]byte(snap)); err == nil {
			t.Errorf("DecodeInitial of a snapshot with a lease of ttl_ms %s = %#v, want an error", ttl, init)
		}
	}
	for _, u := range []statesync.Update[State]{putUpdate{"", "v"}, removeUpdate{""}, putWithLease{"", "v", "L"}} {
		if data, err := (codec{}).EncodeUpdates([]statesync.Update[State]{u}); !errors.Is(err, errEmptyKey) {
			t.Errorf("EncodeUpdates(%#v) = %s, %v; want errEmptyKey", u, data, err)
		}
	}
	// Other spacing and field order are valid JSON and decode the same.
	us, err := codec{}.DecodeUpdates([]byte(` { "ops" : [ { "value":"v", "key":"k", "op":"put" } ] } `))
	if err != nil || !reflect.DeepEqual(us, []statesync.Update[State]{putUpdate{"k", "v"}}) {
		t.Errorf("non-canonical JSON: %#v, %v", us, err)
	}
}

// FuzzDecodeUpdates: decoding never panics, the fast path agrees with the
// strict decoder whenever it accepts, and whatever decodes re-encodes to
// something that decodes the same.
func FuzzDecodeUpdates(f *testing.F) {
	for _, s := range []string{
		`{"ops":[{"op":"put","key":"k","value":"v"}]}`, `{"ops":[{"op":"remove","key":"k"},{"op":"clear"}]}`,
		`{"ops":[{"op":"put","key":"a\"b","value":"\u00e9"}]}`, `{"ops":[{"op":"put","key":"k","value":"v"},]}`, `{"ops":[{"op":"clear"}]}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		strict, strictErr := decodeUpdatesStrict(data)
		if fast, ok := decodeCanonicalUpdates(data); ok {
			if strictErr != nil || !reflect.DeepEqual(fast, strict) {
				t.Fatalf("%q: fast path %#v, strict %#v, %v", data, fast, strict, strictErr)
			}
		}
		if strictErr != nil {
			return
		}
		again, err := codec{}.EncodeUpdates(strict)
		if err != nil {
			t.Fatal(err)
		}
		back, err := codec{}.DecodeUpdates(again)
		if err != nil || !reflect.DeepEqual(back, strict) {
			t.Fatalf("%q decoded to %#v, re-encoded to %s, decoded to %#v, %v", data, strict, again, back, err)
		}
	})
}

// FuzzDecodeInitial: snapshots never panic and round-trip.
func FuzzDecodeInitial(f *testing.F) {
	f.Add([]byte(`{"properties":{"k":"v"},"revisions":{"k":3}}`))
	f.Add([]byte(`{"properties":{}}`))
	f.Add([]byte(`{"properties":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		init, err := codec{}.DecodeInitial(data)
		if err != nil {
			return
		}
		state := init.Create(1)
		again, err := codec{}.EncodeInitial(snapshotUpdate{state})
		if err != nil {
			t.Fatal(err)
		}
		back, err := codec{}.DecodeInitial(again)
		if err != nil {
			t.Fatalf("%q re-encoded to %s, which does not decode: %v", data, again, err)
		}
		b := back.Create(1)
		for k, p := range state.All() {
			if q, ok := b.Lookup(k); !ok || q != p {
				t.Fatalf("%q: %q was %+v, after a round trip %+v", data, k, p, q)
			}
		}
		if b.Len() != state.Len() {
			t.Fatalf("%q: %d properties, after a round trip %d", data, state.Len(), b.Len())
		}
	})
}

// applyAll equals applying the updates one by one, in batches with lease
// updates too (it once dropped those before a CLEAR).
func TestApplyAllEqualsOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 400 {
		var updates []pending
		for i := range rng.IntN(60) {
			k := string(rune('a' + rng.IntN(5)))
			var u statesync.Update[State]
			x := rng.IntN(10)
			if round%2 == 1 && rng.IntN(4) == 0 { // odd rounds have lease updates
				x = 10 + rng.IntN(2)
			}
			switch x {
			case 0:
				u = clearUpdate{}
			case 10:
				u = registerLease{"l" + k, "h", time.Hour}
			case 11:
				u = putWithLease{k, strconv.Itoa(i), "l" + k}
			case 1, 2, 3:
				u = removeUpdate{k}
			default:
				u = putUpdate{k, strconv.Itoa(i)}
			}
			updates = append(updates, pending{Update: u, Revision: uint64(i + 2)})
		}
		start := putUpdate{"a", "start"}.Apply(putUpdate{"z", "kept?"}.Apply(State{}, 1), 1)
		want := start
		for _, p := range updates {
			want = p.Update.Apply(want, p.Revision)
		}
		got := applyBatch(start, updates)
		if !reflect.DeepEqual(collect(got), collect(want)) {
			t.Fatalf("round %d: applyAll gave %v, one by one %v", round, collect(got), collect(want))
		}
		if g, w := maps.Collect(got.Leases()), maps.Collect(want.Leases()); !reflect.DeepEqual(g, w) {
			t.Fatalf("round %d: applyAll left leases %v, one by one %v", round, g, w)
		}
	}
}

func collect(s State) map[string]Property {
	m := map[string]Property{}
	for k, p := range s.All() {
		m[k] = p
	}
	return m
}

// The wire form of a registration: refresh and revoke name it, a snapshot
// keeps it, and a registration anywhere else, or 0, is not an entry.
func TestRegistrationOnTheWire(t *testing.T) {
	var codec codec
	us := []statesync.Update[State]{
		refreshLease{Lease: "L", Holder: "h", Registration: 12},
		revokeLease{Lease: "L", Holder: "h", Registration: 12},
		refreshLease{Lease: "L", Holder: "h"},
	}
	data, err := codec.EncodeUpdates(us)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ops":[{"op":"refresh_lease","lease":"L","holder":"h","registration":12},{"op":"revoke_lease","lease":"L","holder":"h","registration":12},{"op":"refresh_lease","lease":"L","holder":"h"}]}`
	if string(data) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", data, want)
	}
	back, err := codec.DecodeUpdates(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range us {
		if back[i] != us[i] {
			t.Fatalf("op %d decoded as %+v, want %+v", i, back[i], us[i])
		}
	}
	for _, bad := range []string{
		`{"ops":[{"op":"refresh_lease","lease":"L","holder":"h","registration":0}]}`,
		`{"ops":[{"op":"register_lease","lease":"L","holder":"h","ttl_ms":1000,"registration":3}]}`,
		`{"ops":[{"op":"expire_lease","lease":"L","registration":3}]}`,
		`{"ops":[{"op":"put","key":"k","value":"v","lease":"L","registration":3}]}`,
		`{"ops":[{"op":"put","key":"k","value":"v","registration":3}]}`,
	} {
		if _, err := codec.DecodeUpdates([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}

	st := registerLease{Lease: "L", Holder: "h", TTL: time.Minute}.ApplyAt(State{}, 7, time.Now())
	snap, err := codec.EncodeInitial(snapshotUpdate{State: st})
	if err != nil {
		t.Fatal(err)
	}
	init, err := codec.DecodeInitial(snap)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := init.Create(8).Lease("L"); l.Registration != 7 {
		t.Fatalf("a snapshot kept registration %d, want 7: %s", l.Registration, snap)
	}
}

// FuzzDecodeOp: a handed call, which anyone can forge, never panics the
// writer it is handed to, and what it decodes to writes updates that
// encode, on a state with its key and on one without.
func FuzzDecodeOp(f *testing.F) {
	f.Add([]byte(`{"call":"Put","key":"k","value":"v"}`))
	f.Add([]byte(`{"call":"Put","key":"","value":"v"}`))
	f.Add([]byte(`{"call":"Remove","key":"k"}`))
	f.Add([]byte(`{"call":"Put","key":"k","value":"v","extra":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fn, err := codec{}.DecodeOp(data)
		if err != nil {
			return
		}
		for _, s := range []State{{}, State{}.Set("k", "old", 1)} {
			updates := fn(s)
			if len(updates) == 0 {
				t.Fatalf("%q wrote nothing: a carried call must write", data)
			}
			if _, err := (codec{}).EncodeUpdates(updates); err != nil {
				t.Fatalf("%q: its updates do not encode: %v", data, err)
			}
		}
	})
}
