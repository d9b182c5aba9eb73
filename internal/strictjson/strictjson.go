// Package strictjson decodes JSON as encoding/json does, but refuses the
// text that encoding/json reads differently from how a reviewer reads it:
// an object member given twice (encoding/json keeps the last one) and a
// member whose name matches a field only if case is ignored (encoding/json
// fills the field with it, so "Value" beside "value" wins). Errors name the
// member and the line it is on.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// NameError is a member name refused: given twice, matching a field only
// when case is ignored, or (where unknown members are refused) matching no
// field.
type NameError struct {
	Line    int
	Name    string
	Problem string // "is given twice", ...
}

func (e *NameError) Error() string { return fmt.Sprintf("line %d: %q %s", e.Line, e.Name, e.Problem) }

// Unmarshal decodes data, one JSON value, into v, refusing members that
// match no field of v's type.
func Unmarshal(data []byte, v any) error {
	return unmarshal(data, v, false)
}

// UnmarshalIgnoringUnknown is Unmarshal for files other programs write
// too: members that match no field are skipped, unless they match one
// when case is ignored.
func UnmarshalIgnoringUnknown(data []byte, v any) error {
	return unmarshal(data, v, true)
}

// CheckDuplicates refuses data if any object in it gives a member twice.
func CheckDuplicates(data []byte) error {
	return check(data, nil, true)
}

func unmarshal(data []byte, v any, ignoreUnknown bool) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return errors.New("strictjson: Unmarshal needs a pointer")
	}
	if !utf8.Valid(data) {
		return errors.New("not UTF-8 text, as JSON must be")
	}
	// Decoding first also proves the text is JSON, which the fast check of
	// names needs; what fails is explained by the slower check, which
	// says where.
	dec := json.NewDecoder(bytes.NewReader(data))
	if !ignoreUnknown {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more follows the JSON value")
	}
	if err == nil {
		s := scanner{data: data, ignoreUnknown: ignoreUnknown, seed: maphash.MakeSeed()}
		if err = s.value(t.Elem(), reflect.ValueOf(v).Elem()); err != errTwiceInMap {
			return err
		}
	}
	if cerr := check(data, t.Elem(), ignoreUnknown); cerr != nil {
		return cerr
	}
	return err
}

func check(data []byte, t reflect.Type, ignoreUnknown bool) error {
	if !utf8.Valid(data) {
		return errors.New("not UTF-8 text, as JSON must be")
	}
	if t == nil && json.Valid(data) {
		s := scanner{data: data, ignoreUnknown: ignoreUnknown, seed: maphash.MakeSeed()}
		return s.value(nil, reflect.Value{})
	}
	// Not JSON: the decoder's tokens say where, in words and a line.
	c := checker{dec: json.NewDecoder(bytes.NewReader(data)), data: data, ignoreUnknown: ignoreUnknown}
	if err := c.value(t); err != nil {
		return err
	}
	if _, err := c.dec.Token(); err != io.EOF {
		return errors.New("more follows the JSON value")
	}
	return nil
}

// checker walks the token stream beside the Go type it will be decoded
// into; a nil type accepts any member names.
type checker struct {
	dec           *json.Decoder
	data          []byte
	ignoreUnknown bool
	depth         int // the objects and arrays it is inside
}

// maxDepth is how deep the checker follows objects and arrays, as
// encoding/json does: it walks them by recursion, and text that nests
// millions deep (a file of "[" alone) would take its stack past Go's limit,
// which kills the process.
const maxDepth = 10000

func (c *checker) line() int {
	return 1 + bytes.Count(c.data[:c.dec.InputOffset()], []byte("\n"))
}

func (c *checker) token() (json.Token, error) {
	tok, err := c.dec.Token()
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		last := bytes.TrimRight(c.data, " \t\r\n")
		return nil, fmt.Errorf("unexpected end of the JSON text at line %d", 1+bytes.Count(last, []byte("\n")))
	}
	if err != nil && bytes.Contains(c.data, []byte("\n")) {
		return nil, fmt.Errorf("line %d: %w", c.line(), err)
	}
	return tok, err
}

func (c *checker) value(t reflect.Type) error {
	t = opaque(t)
	tok, err := c.token()
	if err != nil {
		return err
	}
	if tok == json.Delim('{') || tok == json.Delim('[') {
		if c.depth++; c.depth > maxDepth {
			return fmt.Errorf("line %d: nested more than %d deep", c.line(), maxDepth)
		}
		defer func() { c.depth-- }()
	}
	switch tok {
	case json.Delim('{'):
		return c.object(t)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for c.dec.More() {
			if err := c.value(elem); err != nil {
				return err
			}
		}
		_, err := c.token()
		return err
	}
	return nil
}

func (c *checker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t != nil && t.Kind() == reflect.Struct:
		fields = structFields(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.token()
		if err != nil {
			return err
		}
		name := tok.(string) // inside an object the decoder yields only string names
		if seen[name] {
			return &NameError{c.line(), name, "is given twice"}
		}
		seen[name] = true
		child := elem
		if fields != nil {
			if child, err = field(fields, name, c.ignoreUnknown, c.line); err != nil {
				return err
			}
		}
		if err := c.value(child); err != nil {
			return err
		}
	}
	_, err := c.token()
	return err
}

// field returns the type of the struct field named name exactly, or nil for
// a member to skip, refusing a name that matches a field only when case is
// ignored, and (unless unknown members are ignored) one that matches none.
func field(fields map[string]reflect.Type, name string, ignoreUnknown bool, line func() int) (reflect.Type, error) {
	if ft, ok := fields[name]; ok {
		return ft, nil
	}
	for exact := range fields {
		if strings.EqualFold(exact, name) {
			return nil, &NameError{line(), name, fmt.Sprintf("is not a field (did you mean %q? names are exact)", exact)}
		}
	}
	if !ignoreUnknown {
		return nil, &NameError{line(), name, "is not a field"}
	}
	return nil, nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// opaque strips pointers, and returns nil for a type that decodes itself
// (time.Time, json.RawMessage) or takes anything (an interface).
func opaque(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

var fieldsOf, indexesOf sync.Map // reflect.Type -> map[string]reflect.Type, map[string][]int

// fieldValue is the field of struct v that the JSON name names.
func fieldValue(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	idx, ok := indexesOf.Load(t)
	if !ok {
		idx = fieldIndexes(t)
		indexesOf.Store(t, idx)
	}
	path, ok := idx.(map[string][]int)[name]
	if !ok {
		return reflect.Value{}
	}
	f, err := v.FieldByIndexErr(path)
	if err != nil { // through a nil embedded pointer
		return reflect.Value{}
	}
	return f
}

// fieldIndexes maps the JSON names of t's fields to their index paths, as
// fieldsIn maps them to their types.
func fieldIndexes(t reflect.Type) map[string][]int {
	idx := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if ft := f.Type; f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, p := range fieldIndexes(ft) {
					if _, shadowed := idx[n]; !shadowed {
						idx[n] = append([]int{i}, p...)
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		idx[name] = []int{i}
	}
	return idx
}

// structFields maps the JSON names of t's fields, those of embedded
// structs included, to their types, as encoding/json names them.
func structFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := fieldsIn(t)
	fieldsOf.Store(t, fields)
	return fields
}

func fieldsIn(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, t := range structFields(ft) {
					if _, shadowed := fields[n]; !shadowed {
						fields[n] = t
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = ft
	}
	return fields
}
