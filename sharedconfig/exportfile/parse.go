package exportfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
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
		return Import{}, errors.New("not UTF-8 text, as JSON must be")
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
	return Import{Props: props}, err
}

// parseExport reads a file export wrote; probe is its members.
func parseExport(data []byte, probe members) (Import, error) {
	var e File
	if err := strictjson.Unmarshal(data, &e); err != nil {
		return Import{}, fmt.Errorf("a %s file that does not read: %w", Format, err)
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
	}
	return fmt.Errorf("not a JSON object: line %d: %w", line, err)
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
