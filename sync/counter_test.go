package statesync_test

import (
	"encoding/json"
	"fmt"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// A shared counter: the smallest state there is. Used by the tests and the
// examples.
type counter int

// add is the counter's one update.
type add int

func (a add) Apply(c counter) counter { return c + counter(a) }

// start is the counter's initial update and snapshot.
type start int

func (s start) Create() counter { return counter(s) }

type counterCodec struct{}

func (counterCodec) EncodeUpdates(us []statesync.Update[counter]) ([]byte, error) {
	adds := make([]add, len(us))
	for i, u := range us {
		adds[i] = u.(add)
	}
	return json.Marshal(adds)
}

func (counterCodec) DecodeUpdates(data []byte) ([]statesync.Update[counter], error) {
	var adds []add
	if err := json.Unmarshal(data, &adds); err != nil {
		return nil, fmt.Errorf("not a counter update: %w", err)
	}
	us := make([]statesync.Update[counter], len(adds))
	for i, a := range adds {
		us[i] = a
	}
	return us, nil
}

func (counterCodec) EncodeInitial(i statesync.InitialUpdate[counter]) ([]byte, error) {
	return json.Marshal(map[string]int{"start": int(i.(start))})
}

func (counterCodec) DecodeInitial(data []byte) (statesync.InitialUpdate[counter], error) {
	var v map[string]int
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not a counter snapshot: %w", err)
	}
	return start(v["start"]), nil
}
