package exportfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
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
	if raw, ok := probe["format"]; ok && json.Unmarshal(raw, &format) == nil && format == Format {
		return parseExport(data, probe)
	}
	props, err := parsePlain(probe)
	return Import{Props: props}, err
}

// parseExport reads a file export wrote; probe is its members.
func parseExport(data []byte, probe map[string]json.RawMessage) (Import, error) {
	var e File
	if err := strictjson.Unmarshal(data, &e); err != nil {
		return Import{}, fmt.Errorf("a %s file that does not read: %w", Format, err)
	}
	raw, ok := probe["properties"]
	if !ok {
		return Import{}, fmt.Errorf("a %s file without properties", Format)
	}
	if _, err := objectMembers(raw); err != nil {
		return Import{}, fmt.Errorf("a %s file whose properties do not read: %w", Format, err)
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
func parsePlain(probe map[string]json.RawMessage) (map[string]string, error) {
	props := make(map[string]string, len(probe))
	for k, raw := range probe {
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

// objectMembers reads one JSON object into its members, refusing anything
// else (null included) and a member name given twice.
func objectMembers(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	notObject := func(err error) error { return jsonError(data, dec.InputOffset(), err) }
	if tok, err := dec.Token(); err != nil {
		return nil, notObject(err)
	} else if tok != json.Delim('{') {
		return nil, notObject(fmt.Errorf("it starts with %s", tokenText(tok)))
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject(err)
		}
		key := tok.(string) // inside an object, the decoder yields only string names
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject(err)
		}
		if _, twice := members[key]; twice {
			return nil, fmt.Errorf("key %q is given twice", key)
		}
		members[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notObject(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject(errors.New("more follows the object"))
	}
	return members, nil
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
