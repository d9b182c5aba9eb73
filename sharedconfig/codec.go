package sharedconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// codec is the JSON encoding of shared config entries, so that a stream can
// be read with standard NATS tools. An update entry is
//
//	{"ops":[{"op":"put","key":"k","value":"v"},{"op":"remove","key":"k"},{"op":"clear"}]}
//
// and a snapshot entry is
//
//	{"properties":{"k":"v", ...},"revisions":{"k":12, ...}}
//
// where revisions says at which revision each property was last set (a
// property it leaves out counts as set at revision 0).
//
// Keys and values are UTF-8 text; anything else is refused before it is
// written, since JSON would silently change it.
type codec struct{}

type wireOp struct {
	Op              string  `json:"op"`
	Key             *string `json:"key,omitempty"`
	Value           *string `json:"value,omitempty"`
	wireLeaseFields         // lease_codec.go
}

type wireUpdates struct {
	Ops []wireOp `json:"ops"`
}

// EncodeUpdates implements statesync.Codec.
func (codec) EncodeUpdates(us []statesync.Update[State]) ([]byte, error) {
	w := wireUpdates{Ops: make([]wireOp, len(us))}
	for i, u := range us {
		if k, ok := updateKey(u); ok && k == "" {
			return nil, errEmptyKey
		}
		switch u := u.(type) {
		case putUpdate:
			w.Ops[i] = wireOp{Op: "put", Key: &u.Key, Value: &u.Value}
		case removeUpdate:
			w.Ops[i] = wireOp{Op: "remove", Key: &u.Key}
		case clearUpdate:
			w.Ops[i] = wireOp{Op: "clear"}
		default:
			op, ok := encodeLeaseOp(u)
			if !ok {
				return nil, fmt.Errorf("cannot encode update %T", u)
			}
			w.Ops[i] = op
		}
	}
	return json.Marshal(w)
}

// DecodeUpdates implements statesync.Codec.
func (codec) DecodeUpdates(data []byte) ([]statesync.Update[State], error) {
	if us, ok := decodeCanonicalUpdates(data); ok {
		return us, nil
	}
	return decodeUpdatesStrict(data)
}

// decodeCanonicalUpdates parses exactly what EncodeUpdates writes, without
// reflection: catching up decodes every entry, so this is the hot path. On
// anything else (other spacing or field order, escapes, bad UTF-8) it gives
// up, and the strict decoder decides.
func decodeCanonicalUpdates(data []byte) ([]statesync.Update[State], bool) {
	p := canonical{data}
	if !p.lit(`{"ops":[`) {
		return nil, false
	}
	var us []statesync.Update[State]
	for {
		if !p.lit(`{"op":"`) {
			return nil, false
		}
		switch {
		case p.lit(`put","key":`):
			k, ok1 := p.str()
			ok2 := p.lit(`,"value":`)
			v, ok3 := p.str()
			if !ok1 || k == "" || !ok2 || !ok3 || !p.lit("}") {
				return nil, false
			}
			us = append(us, putUpdate{k, v})
		case p.lit(`remove","key":`):
			k, ok := p.str()
			if !ok || k == "" || !p.lit("}") {
				return nil, false
			}
			us = append(us, removeUpdate{k})
		case p.lit(`clear"}`):
			us = append(us, clearUpdate{})
		default:
			return nil, false
		}
		if p.lit(",") {
			continue
		}
		return us, p.lit("]}") && len(p.rest) == 0
	}
}

type canonical struct{ rest []byte }

func (p *canonical) lit(s string) bool {
	if !bytes.HasPrefix(p.rest, []byte(s)) {
		return false
	}
	p.rest = p.rest[len(s):]
	return true
}

// str takes a JSON string with no escapes and valid UTF-8.
func (p *canonical) str() (string, bool) {
	if len(p.rest) == 0 || p.rest[0] != '"' {
		return "", false
	}
	for i := 1; i < len(p.rest); i++ {
		switch c := p.rest[i]; {
		case c == '"':
			s := p.rest[1:i]
			if !utf8.Valid(s) {
				return "", false
			}
			p.rest = p.rest[i+1:]
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

func decodeUpdatesStrict(data []byte) ([]statesync.Update[State], error) {
	var w wireUpdates
	if err := strictUnmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("not a sharedconfig update: %w", err)
	}
	if len(w.Ops) == 0 {
		return nil, errors.New("not a sharedconfig update: no ops")
	}
	us := make([]statesync.Update[State], len(w.Ops))
	for i, op := range w.Ops {
		if op.Key != nil && *op.Key == "" {
			return nil, fmt.Errorf("op %d has an empty key, which no command writes: %s", i, mustJSON(op))
		}
		if u, ok := decodeLeaseOp(op); ok {
			us[i] = u
			continue
		}
		if op.wireLeaseFields != (wireLeaseFields{}) {
			return nil, fmt.Errorf("op %d is not a valid lease operation: %s", i, mustJSON(op))
		}
		switch {
		case op.Op == "put" && op.Key != nil && op.Value != nil:
			us[i] = putUpdate{*op.Key, *op.Value}
		case op.Op == "remove" && op.Key != nil && op.Value == nil:
			us[i] = removeUpdate{*op.Key}
		case op.Op == "clear" && op.Key == nil && op.Value == nil:
			us[i] = clearUpdate{}
		default:
			return nil, fmt.Errorf("op %d is not a valid put, remove or clear: %s", i, mustJSON(op))
		}
	}
	return us, nil
}

// errEmptyKey: readers take an entry with an empty key for damage, so none
// is written (no command can name one to read, replace or remove it).
var errEmptyKey = errors.New("a key is empty: keys are never empty")

// updateKey is the key a put or remove names.
func updateKey(u statesync.Update[State]) (string, bool) {
	switch u := u.(type) {
	case putUpdate:
		return u.Key, true
	case removeUpdate:
		return u.Key, true
	case putWithLease:
		return u.Key, true
	}
	return "", false
}

// EncodeInitial implements statesync.Codec. It writes the properties in key
// order without building an intermediate map.
func (codec) EncodeInitial(i statesync.InitialUpdate[State]) ([]byte, error) {
	s := i.Create(0)
	var b bytes.Buffer
	object := func(field string, value func(Property) []byte) {
		b.WriteString(`"` + field + `":{`)
		first := true
		for k, p := range s.All() {
			if !first {
				b.WriteByte(',')
			}
			first = false
			kj, _ := json.Marshal(k)
			b.Write(kj)
			b.WriteByte(':')
			b.Write(value(p))
		}
		b.WriteByte('}')
	}
	b.WriteByte('{')
	object("properties", func(p Property) []byte { v, _ := json.Marshal(p.Value); return v })
	b.WriteByte(',')
	object("revisions", func(p Property) []byte { return strconv.AppendUint(nil, p.Revision, 10) })
	if err := encodeSnapshotLeases(&b, s); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeInitial implements statesync.Codec.
func (codec) DecodeInitial(data []byte) (statesync.InitialUpdate[State], error) {
	if init, ok := decodeCanonicalSnapshot(data); ok {
		return init, nil
	}
	return decodeSnapshotStrict(data)
}

func decodeSnapshotStrict(data []byte) (statesync.InitialUpdate[State], error) {
	var w struct {
		Properties *map[string]string `json:"properties"`
		Revisions  map[string]uint64  `json:"revisions"`
		wireSnapshotLeases
	}
	if err := strictUnmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("not a sharedconfig snapshot: %w", err)
	}
	if w.Properties == nil {
		return nil, errors.New(`not a sharedconfig snapshot: no "properties"`)
	}
	if _, ok := (*w.Properties)[""]; ok {
		return nil, errors.New("not a sharedconfig snapshot: it holds an empty key, which no command writes")
	}
	es := make([]entry, 0, len(*w.Properties))
	var unrevised []string // set by the snapshot itself: an import's
	for k, v := range *w.Properties {
		es = append(es, entry{k, Property{Value: v, Revision: w.Revisions[k], Lease: w.LeaseOf[k]}})
		if w.Revisions[k] == 0 {
			unrevised = append(unrevised, k)
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	init, err := w.wireSnapshotLeases.snapshot(State{root: build(es)})
	if err != nil || len(unrevised) == 0 {
		return init, err
	}
	return importedSnapshot{State: init.Create(0), set: unrevised}, nil
}

func strictUnmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errors.New("not UTF-8")
	}
	return strictjson.Unmarshal(data, v)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
