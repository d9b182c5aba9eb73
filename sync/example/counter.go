package example

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Counter is a shared counter, the smallest state a synchronizer can keep;
// it shows that the synchronizer is not tied to maps. Add is its update,
// CounterStart its initial update and snapshot, CounterCodec their JSON.
type Counter int64

// Add adds N to a Counter.
type Add struct{ N int64 }

// Apply implements Update.
func (a Add) Apply(c Counter, _ uint64) Counter { return c + Counter(a.N) }

// CounterStart is a Counter's initial value.
type CounterStart struct{ Value int64 }

// Create implements InitialUpdate.
func (s CounterStart) Create(uint64) Counter { return Counter(s.Value) }

// CounterCodec encodes a Counter's entries as JSON: updates as
// {"add":[n,...]} and snapshots as {"value":n}.
type CounterCodec struct{}

// EncodeUpdates implements Codec.
func (CounterCodec) EncodeUpdates(us []statesync.Update[Counter]) ([]byte, error) {
	adds := make([]int64, len(us))
	for i, u := range us {
		a, ok := u.(Add)
		if !ok {
			return nil, fmt.Errorf("cannot encode counter update %T", u)
		}
		adds[i] = a.N
	}
	return json.Marshal(map[string][]int64{"add": adds})
}

// DecodeUpdates implements Codec.
func (CounterCodec) DecodeUpdates(data []byte) ([]statesync.Update[Counter], error) {
	var w struct {
		Add []int64 `json:"add"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil || len(w.Add) == 0 {
		return nil, fmt.Errorf("not a counter update: %q", data)
	}
	us := make([]statesync.Update[Counter], len(w.Add))
	for i, n := range w.Add {
		us[i] = Add{n}
	}
	return us, nil
}

// EncodeInitial implements Codec.
func (CounterCodec) EncodeInitial(i statesync.InitialUpdate[Counter]) ([]byte, error) {
	return json.Marshal(map[string]int64{"value": int64(i.Create(0))})
}

// DecodeInitial implements Codec.
func (CounterCodec) DecodeInitial(data []byte) (statesync.InitialUpdate[Counter], error) {
	var w struct {
		Value *int64 `json:"value"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil || w.Value == nil {
		return nil, fmt.Errorf("not a counter snapshot: %q", data)
	}
	return CounterStart{*w.Value}, nil
}

// Increment adds 1 to the shared counter through s and returns the value it
// added to.
func Increment(ctx context.Context, s *statesync.Synchronizer[Counter]) (Counter, error) {
	before, _, err := statesync.UpdateState(ctx, s, func(c Counter) ([]statesync.Update[Counter], Counter) {
		return []statesync.Update[Counter]{Add{1}}, c
	})
	return before, err
}
