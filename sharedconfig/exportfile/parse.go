package exportfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Parse reads what export writes, or a plain JSON object of keys to
// string values, and returns the keys and values. It refuses what would
// import something other than what the file seems to say: text that is not
// UTF-8 (the decoder would replace bytes silently), a key given twice (the
// decoder would keep the last silently), an empty key (the shell never
// writes one), and null or an export without its properties (an import
// that replaces would then empty the config). Which keys were leased is
// the caller's to decide on: importing them makes them plain keys.
func Parse(data []byte) (Import, error) {
	if !utf8.Valid(data) {
		return Import{}, notUTF8(data)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte order mark, as Windows editors write
	var twice *strictjson.NameError
	if err := strictjson.CheckDuplicates(data); errors.As(err, &twice) {
		return Import{}, err
	}
	probe, err := objectMembers(data)
	if err != nil {
		return Import{}, err
	}
	var format string
	if m, ok := probe["format"]; ok && json.Unmarshal(m.value, &format) == nil && format == Format {
		return parseExport(data, probe)
	}
	props, err := parsePlain(probe)
	if err != nil && strings.HasPrefix(format, exportPrefix) {
		// Not a plain object either: an export this program cannot read.
		return Import{}, fmt.Errorf("a file of format %q, which this program does not read (it reads %s)", format, Format)
	}
	return Import{Props: props}, err
}

// exportPrefix starts the format of every export file, of this version or
// another.
const exportPrefix = "sharedconfig-export/"

// notUTF8 says where data stops being UTF-8: a file cut short in the
// middle of a character says so.
func notUTF8(data []byte) error {
	valid := 0
	for valid < len(data) {
		r, size := utf8.DecodeRune(data[valid:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		valid += size
	}
	line := 1 + bytes.Count(data[:valid], []byte("\n"))
	if rest := data[valid:]; len(rest) < utf8.UTFMax && !utf8.FullRune(rest) {
		return fmt.Errorf("not UTF-8 text, as JSON must be: the file ends in the middle of a character at line %d (a file cut short?)", line)
	}
	return fmt.Errorf("not UTF-8 text, as JSON must be: line %d holds the byte 0x%02x, which starts no UTF-8 character", line, data[valid])
}

// parseExport reads a file export wrote; probe is its members.
func parseExport(data []byte, probe members) (Import, error) {
	var e File
	if err := strictjson.Unmarshal(data, &e); err != nil {
		return Import{}, fmt.Errorf("a %s file that does not read: %w", Format, typeError(data, err))
	}
	m, ok := probe["properties"]
	if !ok {
		return Import{}, fmt.Errorf("a %s file without properties", Format)
	}
	properties, err := objectMembers(m.value)
	if err != nil {
		return Import{}, fmt.Errorf("a %s file whose properties do not read: %w", Format, err)
	}
	if err := properties.refuseLoneSurrogates(); err != nil {
		return Import{}, err
	}
	f := Import{Props: make(map[string]string, len(e.Properties)), Leased: map[string]string{}}
	for k, p := range e.Properties {
		if k == "" {
			return Import{}, errors.New("a key is empty: keys are never empty")
		}
		f.Props[k] = p.Value
		if p.Lease != "" {
			f.Leased[k] = p.Lease
		}
	}
	return f, nil
}

// parsePlain reads a plain JSON object of keys to string values; probe is
// its members.
func parsePlain(probe members) (map[string]string, error) {
	if err := probe.refuseLoneSurrogates(); err != nil {
		return nil, err
	}
	props := make(map[string]string, len(probe))
	for k, m := range probe {
		raw := m.value
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || string(raw) == "null" {
			return nil, fmt.Errorf("key %q: its value is %s, not a string (quote numbers and booleans)", k, abbreviate(raw))
		}
		if k == "" {
			return nil, errors.New("a key is empty: keys are never empty")
		}
		props[k] = v
	}
	return props, nil
}

// members are a JSON object's members by name.
type members map[string]member

type member struct {
	literal []byte // the name as the file writes it, quotes and escapes included
	value   json.RawMessage
}

// objectMembers reads one JSON object into its members, refusing anything
// else (null included) and a member name given twice.
func objectMembers(data []byte) (members, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	notObject := func(err error) error { return jsonError(data, dec.InputOffset(), err) }
	if tok, err := dec.Token(); err != nil {
		return nil, notObject(err)
	} else if tok != json.Delim('{') {
		return nil, notObject(fmt.Errorf("it starts with %s", tokenText(tok)))
	}
	ms := members{}
	for dec.More() {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject(err)
		}
		key := tok.(string) // inside an object, the decoder yields only string names
		literal := bytes.TrimLeft(data[before:dec.InputOffset()], ", \t\r\n")
		literal = literal[:bytes.LastIndexByte(literal, '"')+1]
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject(err)
		}
		if _, twice := ms[key]; twice {
			return nil, fmt.Errorf("key %q is given twice", key)
		}
		ms[key] = member{literal: literal, value: raw}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notObject(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject(errors.New("more follows the object"))
	}
	return ms, nil
}

// jsonError says where reading a JSON object failed: a file cut short says
// so, with the line it ends on, rather than "EOF".
func jsonError(data []byte, offset int64, err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		offset = syntax.Offset
	}
	line := 1 + bytes.Count(data[:min(max(offset, 0), int64(len(data)))], []byte("\n"))
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return errors.New("not a JSON object: the file is empty")
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		line = 1 + bytes.Count(bytes.TrimRight(data, " \t\r\n"), []byte("\n"))
		return fmt.Errorf("unexpected end of file at line %d: the JSON object is not closed (a file cut short?)", line)
	case syntax != nil && strings.HasSuffix(syntax.Error(), "exceeded max depth"):
		return fmt.Errorf("not a JSON object as import reads one: line %d: nested more than 10000 deep", line)
	}
	return fmt.Errorf("not a JSON object: line %d: %w", line, err)
}

// typeError is err, but a value of the wrong type is said in the file's
// terms, where it is and what belongs there, rather than in Go's.
func typeError(data []byte, err error) error {
	var badTime *time.ParseError
	if errors.As(err, &badTime) {
		return fmt.Errorf("%q is not a time as export writes one (RFC 3339: 2026-12-01T09:30:00Z)", badTime.Value)
	}
	var wrong *json.UnmarshalTypeError
	if !errors.As(err, &wrong) {
		return err
	}
	line := 1 + bytes.Count(data[:min(max(wrong.Offset, 0), int64(len(data)))], []byte("\n"))
	kind, number, _ := strings.Cut(wrong.Value, " ")
	switch {
	case number != "" && wrong.Field == "":
		return fmt.Errorf("line %d: the number %s is out of range", line, number)
	case number != "":
		return fmt.Errorf("line %d: %q holds %s, where %s belongs", line, wrong.Field, number, kindText(wrong.Type))
	}
	return fmt.Errorf("line %d: %q holds %s, where %s belongs", line, wrong.Field, kindText(jsonKinds[kind]), kindText(wrong.Type))
}

// jsonKinds are Go types that stand for the kinds of JSON value that
// encoding/json names in its errors.
var jsonKinds = map[string]reflect.Type{
	"string": reflect.TypeFor[string](), "number": reflect.TypeFor[float64](), "bool": reflect.TypeFor[bool](),
	"array": reflect.TypeFor[[]any](), "object": reflect.TypeFor[map[string]any](),
}

// kindText names what a Go type of the file's takes, as JSON says it.
func kindText(t reflect.Type) string {
	if t == nil {
		return "a value of another kind"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number from 0 to 18446744073709551615"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a value of another kind"
}

func tokenText(tok json.Token) string {
	switch tok := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return string(tok)
	case string:
		return "a string"
	default:
		return fmt.Sprint(tok)
	}
}

func abbreviate(b []byte) string {
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

// refuseLoneSurrogates refuses a member whose name or value writes half of
// a UTF-16 surrogate pair without the other half (\ud800 alone): that is
// no character, and encoding/json reads U+FFFD in its place without a
// word, so the import would hold something the file does not say. The
// first such member in name order is named.
func (ms members) refuseLoneSurrogates() error {
	for _, k := range slices.Sorted(maps.Keys(ms)) {
		m := ms[k]
		name := strconv.Quote(k)
		esc := loneSurrogate(m.literal)
		if esc != "" {
			name = shownLiteral(m.literal)
		} else {
			esc = loneSurrogate(m.value)
		}
		if esc != "" {
			return fmt.Errorf("key %s: the file writes %s, half of a UTF-16 surrogate pair, without the other half: %w", name, esc, sharedconfig.ErrNotUTF8)
		}
	}
	return nil
}

// loneSurrogate returns the first \u escape in JSON text that writes half
// of a surrogate pair alone, or "" if there is none.
func loneSurrogate(text []byte) string {
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		i++ // the escaped character: a \\ is skipped whole, so \\ud800 is text
		r, ok := hex4(text, i)
		switch {
		case !ok || !utf16.IsSurrogate(r):
			continue
		case r < 0xdc00: // a high half, which a low half must follow
			if low, ok := hex4(text, i+6); ok && text[i+5] == '\\' && 0xdc00 <= low && low < 0xe000 {
				i += 10
				continue
			}
		}
		return string(text[i-1 : i+5])
	}
	return ""
}

// hex4 reads the four hex digits after the u of a \u escape at text[i].
func hex4(text []byte, i int) (rune, bool) {
	if i+5 > len(text) || text[i] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(text[i+1:i+5]), 16, 16)
	return rune(n), err == nil
}

// shownLiteral is a JSON string as the file writes it, with anything that
// is not printable escaped, so that an error naming it cannot drive the
// terminal.
func shownLiteral(literal []byte) string {
	var b strings.Builder
	for _, r := range string(literal) {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
