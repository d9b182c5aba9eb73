package sharedconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/benbjohnson/immutable"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Codec is the JSON encoding of shared config entries, so that a stream can
// be read with standard NATS tools. An update entry is
//
//	{"ops":[{"op":"put","key":"k","value":"v"},{"op":"remove","key":"k"},{"op":"clear"}]}
//
// and a snapshot entry is
//
//	{"properties":{"k":"v", ...}}
//
// Keys and values are UTF-8 text; anything else is refused before it is
// written, since JSON would silently change it.
type Codec struct{}

type wireOp struct {
	Op    string  `json:"op"`
	Key   *string `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
}

type wireUpdates struct {
	Ops []wireOp `json:"ops"`
}

// EncodeUpdates implements statesync.Codec.
func (Codec) EncodeUpdates(us []statesync.Update[State]) ([]byte, error) {
	w := wireUpdates{Ops: make([]wireOp, len(us))}
	for i, u := range us {
		switch u := u.(type) {
		case Put:
			w.Ops[i] = wireOp{Op: "put", Key: &u.Key, Value: &u.Value}
		case Remove:
			w.Ops[i] = wireOp{Op: "remove", Key: &u.Key}
		case Clear:
			w.Ops[i] = wireOp{Op: "clear"}
		default:
			return nil, fmt.Errorf("cannot encode update %T", u)
		}
	}
	return json.Marshal(w)
}

// DecodeUpdates implements statesync.Codec.
func (Codec) DecodeUpdates(data []byte) ([]statesync.Update[State], error) {
	var w wireUpdates
	if err := strictUnmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("not a sharedconfig update: %w", err)
	}
	if len(w.Ops) == 0 {
		return nil, errors.New("not a sharedconfig update: no ops")
	}
	us := make([]statesync.Update[State], len(w.Ops))
	for i, op := range w.Ops {
		switch {
		case op.Op == "put" && op.Key != nil && op.Value != nil:
			us[i] = Put{*op.Key, *op.Value}
		case op.Op == "remove" && op.Key != nil && op.Value == nil:
			us[i] = Remove{*op.Key}
		case op.Op == "clear" && op.Key == nil && op.Value == nil:
			us[i] = Clear{}
		default:
			return nil, fmt.Errorf("op %d is not a valid put, remove or clear: %s", i, mustJSON(op))
		}
	}
	return us, nil
}

// EncodeInitial implements statesync.Codec. It writes the properties in key
// order without building an intermediate map.
func (Codec) EncodeInitial(i statesync.InitialUpdate[State]) ([]byte, error) {
	s := i.Create()
	var b bytes.Buffer
	b.WriteString(`{"properties":{`)
	first := true
	for k, v := range s.All() {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(v)
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

// DecodeInitial implements statesync.Codec.
func (Codec) DecodeInitial(data []byte) (statesync.InitialUpdate[State], error) {
	var w struct {
		Properties *map[string]string `json:"properties"`
	}
	if err := strictUnmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("not a sharedconfig snapshot: %w", err)
	}
	if w.Properties == nil {
		return nil, errors.New(`not a sharedconfig snapshot: no "properties"`)
	}
	b := immutable.NewSortedMapBuilder[string, string](stringComparer)
	for k, v := range *w.Properties {
		b.Set(k, v)
	}
	return Snapshot{State{b.Map()}}, nil
}

func strictUnmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errors.New("not UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
