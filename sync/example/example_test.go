package example_test

import (
	"slices"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
)

// What the codecs write they read back, and what is not theirs they refuse
// with an error (entries may come from foreign writers).
func TestCodecsRoundTripAndRefuseGarbage(t *testing.T) {
	cc := example.CounterCodec{}
	data, err := cc.EncodeUpdates([]statesync.Update[example.Counter]{example.Add{N: 2}, example.Add{N: -5}})
	if err != nil {
		t.Fatal(err)
	}
	us, err := cc.DecodeUpdates(data)
	if err != nil || len(us) != 2 || us[1] != (example.Add{N: -5}) {
		t.Fatalf("counter updates came back as %v, %v", us, err)
	}
	snap, _ := cc.EncodeInitial(example.CounterStart{Value: 7})
	if i, err := cc.DecodeInitial(snap); err != nil || i.Create(0) != 7 {
		t.Fatalf("counter snapshot came back as %v, %v", i, err)
	}

	sc := example.SetCodec{}
	data, _ = sc.EncodeUpdates([]statesync.Update[example.Set]{example.SetAdd{Member: "a"}, example.SetRemove{Member: "b"}})
	if us, err := sc.DecodeUpdates(data); err != nil || len(us) != 2 || us[1] != (example.SetRemove{Member: "b"}) {
		t.Fatalf("set updates came back as %v, %v", us, err)
	}
	snap, _ = sc.EncodeInitial(example.SetOf{Members: []string{"y", "x"}})
	if i, err := sc.DecodeInitial(snap); err != nil || !slices.Equal(slices.Collect(i.Create(0).Members()), []string{"x", "y"}) {
		t.Fatalf("set snapshot came back as %v, %v", i, err)
	}

	for _, garbage := range []string{"", "{not json", "[]", "{}", `[{"add":"a","remove":"b"}]`} {
		if _, err := cc.DecodeUpdates([]byte(garbage)); err == nil {
			t.Errorf("counter decoded %q", garbage)
		}
		if _, err := sc.DecodeUpdates([]byte(garbage)); err == nil {
			t.Errorf("set decoded %q", garbage)
		}
		if _, err := cc.DecodeInitial([]byte(garbage)); err == nil {
			t.Errorf("counter decoded snapshot %q", garbage)
		}
		if _, err := sc.DecodeInitial([]byte(garbage)); err == nil {
			t.Errorf("set decoded snapshot %q", garbage)
		}
	}
	// Names are exact and given once: encoding/json alone would read the
	// second of twins, or "ADD" as "add".
	for _, twins := range []string{`{"add":[1],"add":[2]}`, `{"add":[1],"ADD":[2]}`} {
		if us, err := cc.DecodeUpdates([]byte(twins)); err == nil {
			t.Errorf("counter decoded %s as %v", twins, us)
		}
	}
	if i, err := cc.DecodeInitial([]byte(`{"value":1,"Value":2}`)); err == nil {
		t.Errorf("counter decoded a snapshot with twin values as %v", i.Create(0))
	}
	if us, err := sc.DecodeUpdates([]byte(`[{"add":"a","Add":"b"}]`)); err == nil {
		t.Errorf("set decoded twin adds as %v", us)
	}
	if i, err := sc.DecodeInitial([]byte(`{"members":["a"],"members":["b"]}`)); err == nil {
		t.Errorf("set decoded twin member lists as %v", slices.Collect(i.Create(0).Members()))
	}
}
