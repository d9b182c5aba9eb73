package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/maphash"
	"reflect"
)

// errTwiceInMap: a map decoded from an object holds fewer entries than the
// object has members, so a name was given twice; the slower check finds it.
var errTwiceInMap = errors.New("a member of an object is given twice")

// scanner checks member names in text already decoded into v (so known to
// be JSON), a byte at a time: the decoder's tokens cost several times the
// decoding. An object decoded into a map is checked for twins by counting
// its members against the map's entries, so its names are never hashed.
type scanner struct {
	data          []byte
	pos           int
	ignoreUnknown bool
	seed          maphash.Seed
}

func (s *scanner) line() int { return 1 + bytes.Count(s.data[:s.pos], []byte("\n")) }

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// str reads the string at pos and returns it as written, between its quotes.
func (s *scanner) str() (raw []byte, escaped bool) {
	start := s.pos + 1
	for s.pos = start; s.data[s.pos] != '"'; s.pos++ {
		if s.data[s.pos] == '\\' {
			escaped = true
			s.pos++ // the escaped byte: never the closing quote
		}
	}
	s.pos++
	return s.data[start : s.pos-1], escaped
}

// value checks the value at pos, decoded into v (of type t; v may be
// invalid where it was not decoded, or its type is opaque).
func (s *scanner) value(t reflect.Type, v reflect.Value) error {
	t, v = opaqueValue(t, v)
	s.space()
	switch s.data[s.pos] {
	case '{':
		if t != nil && t.Kind() == reflect.Map {
			return s.mapObject(t, v)
		}
		return s.object(t, v)
	case '[':
		return s.array(t, v)
	case '"':
		s.str()
	default: // a number, true, false or null
		for ; s.pos < len(s.data); s.pos++ {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return nil
			}
		}
	}
	return nil
}

func (s *scanner) array(t reflect.Type, v reflect.Value) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i, first := 0, true; ; i++ {
		s.pos++ // past '[' or ','
		if s.space(); first && s.data[s.pos] == ']' {
			s.pos++
			return nil
		}
		first = false
		var ev reflect.Value
		if elem != nil && v.IsValid() && i < v.Len() {
			ev = v.Index(i)
		}
		if err := s.value(elem, ev); err != nil {
			return err
		}
		if s.space(); s.data[s.pos] == ']' {
			s.pos++
			return nil
		}
	}
}

// name reads a member's name and the colon after it.
func (s *scanner) name() (raw []byte, at int) {
	at = s.pos
	raw, escaped := s.str()
	if escaped {
		var name string
		json.Unmarshal(s.data[at:s.pos], &name) // known to be JSON: cannot fail
		raw = []byte(name)
	}
	s.space()
	s.pos++ // ':'
	return raw, at
}

// mapObject checks an object decoded into the map v.
func (s *scanner) mapObject(t reflect.Type, v reflect.Value) error {
	elem, _ := opaqueValue(t.Elem(), reflect.Value{})
	descend := elem != nil && t.Key().Kind() == reflect.String
	if descend { // only to values that hold objects
		switch elem.Kind() {
		case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		default:
			descend = false
		}
	}
	count := 0
	for s.pos++; ; s.pos++ { // past '{' or ','
		if s.space(); count == 0 && s.data[s.pos] == '}' {
			break
		}
		raw, _ := s.name()
		count++
		var ev reflect.Value
		if descend && v.IsValid() {
			ev = v.MapIndex(reflect.ValueOf(string(raw)).Convert(t.Key()))
		}
		if err := s.value(t.Elem(), ev); err != nil {
			return err
		}
		if s.space(); s.data[s.pos] == '}' {
			break
		}
	}
	s.pos++
	if v.IsValid() && count > v.Len() {
		return errTwiceInMap
	}
	return nil
}

// object checks an object decoded into a struct (or not decoded: t nil).
func (s *scanner) object(t reflect.Type, v reflect.Value) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = structFields(t)
	}
	var names members
	for s.pos++; ; s.pos++ { // past '{' or ','
		if s.space(); len(names.list) == 0 && s.data[s.pos] == '}' {
			break
		}
		raw, at := s.name()
		if names.add(raw, s.seed) {
			s.pos = at
			return &NameError{s.line(), string(raw), "is given twice"}
		}
		var child reflect.Type
		var cv reflect.Value
		if fields != nil {
			var err error
			if child, err = field(fields, string(raw), s.ignoreUnknown, func() int { s.pos = at; return s.line() }); err != nil {
				return err
			}
			if child != nil && v.IsValid() {
				cv = fieldValue(v, string(raw))
			}
		}
		if err := s.value(child, cv); err != nil {
			return err
		}
		if s.space(); s.data[s.pos] == '}' {
			break
		}
	}
	s.pos++
	return nil
}

// opaqueValue is opaque for a type and the value decoded into it: pointers
// followed, and nothing for a type that decodes itself or takes anything.
func opaqueValue(t reflect.Type, v reflect.Value) (reflect.Type, reflect.Value) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() {
			v = v.Elem()
		}
	}
	if opaque(t) == nil {
		return nil, reflect.Value{}
	}
	return t, v
}

// members is the set of an object's member names so far: a list while
// short, hashed once long. Names are the bytes of the text where they need
// no unescaping, so none is copied.
type members struct {
	list   [][]byte
	hashed map[uint64]int // hash -> index in list
}

// add adds name and reports whether it was there already.
func (m *members) add(name []byte, seed maphash.Seed) (twice bool) {
	if m.hashed == nil && len(m.list) < 16 {
		for _, n := range m.list {
			if bytes.Equal(n, name) {
				return true
			}
		}
		m.list = append(m.list, name)
		return false
	}
	if m.hashed == nil {
		m.hashed = make(map[uint64]int, 64)
		for i, n := range m.list {
			m.hashed[maphash.Bytes(seed, n)] = i
		}
	}
	h := maphash.Bytes(seed, name)
	if i, ok := m.hashed[h]; ok && bytes.Equal(m.list[i], name) {
		return true
	}
	m.hashed[h] = len(m.list)
	m.list = append(m.list, name)
	return false
}
