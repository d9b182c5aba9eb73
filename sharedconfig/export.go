package sharedconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// ExportFormat marks a file that Export wrote.
const ExportFormat = "sharedconfig-export/1"

// Exported is a config as a file holds it: what "sharedconfig export"
// writes and "sharedconfig import" reads.
type Exported struct {
	Format     string                      `json:"format"`
	Scope      string                      `json:"scope"`
	Name       string                      `json:"name"`
	Revision   uint64                      `json:"revision"`
	Exported   time.Time                   `json:"exported"`
	Properties map[string]ExportedProperty `json:"properties"`
	// Leases are the leases the properties name, as they stood: a record,
	// not something an import recreates (a lease lives as long as its
	// holder, a running process, keeps it alive).
	Leases map[string]ExportedLease `json:"leases,omitempty"`
}

// ExportedProperty is one value and the revision that set it, and the
// lease it is attached to, if any.
type ExportedProperty struct {
	Value    string `json:"value"`
	Revision uint64 `json:"revision"`
	Lease    string `json:"lease,omitempty"`
}

// ExportedLease is a lease as it stood at the export.
type ExportedLease struct {
	Holder   string    `json:"holder"`
	TTL      string    `json:"ttl"`      // as the shell shows it: 10s, 1m30s
	Deadline time.Time `json:"deadline"` // by the server's clock
}

// Export describes the local copy as a file would hold it.
func (c *Config) Export(scope, name string) Exported {
	st, _ := c.sync.State()
	e := Exported{Format: ExportFormat, Scope: scope, Name: name, Revision: st.Revision, Exported: time.Now().UTC(), Properties: map[string]ExportedProperty{}}
	for k, p := range st.Value.All() {
		e.Properties[k] = ExportedProperty{Value: p.Value, Revision: p.Revision, Lease: p.Lease}
	}
	for name, l := range st.Value.Leases() {
		if e.Leases == nil {
			e.Leases = map[string]ExportedLease{}
		}
		e.Leases[name] = ExportedLease{Holder: l.Holder, TTL: l.TTL.String(), Deadline: l.Deadline.UTC()}
	}
	return e
}

// ImportFile is what an import file holds.
type ImportFile struct {
	Props map[string]string
	// Leased maps each key the file marks as attached to a lease (an
	// export of a key put WithLease) to its lease.
	Leased map[string]string
}

// WithoutLeased returns the file's keys and values but its leased keys.
func (f ImportFile) WithoutLeased() map[string]string {
	props := maps.Clone(f.Props)
	for k := range f.Leased {
		delete(props, k)
	}
	return props
}

// ParseImport reads what Export writes, or a plain JSON object of keys to
// string values, and returns the keys and values. It refuses what would
// import something other than what the file seems to say: text that is not
// UTF-8 (the decoder would replace bytes silently), a key given twice (the
// decoder would keep the last silently), an empty key (the shell never
// writes one), and null or an export without its properties (an Import
// that replaces would then empty the config). Which keys were leased is
// the caller's to decide on: importing them makes them plain keys.
func ParseImport(data []byte) (ImportFile, error) {
	if !utf8.Valid(data) {
		return ImportFile{}, errors.New("not UTF-8 text, as JSON must be")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte order mark, as Windows editors write
	var twice *strictjson.NameError
	if err := strictjson.CheckDuplicates(data); errors.As(err, &twice) {
		return ImportFile{}, err
	}
	probe, err := objectMembers(data)
	if err != nil {
		return ImportFile{}, err
	}
	var format string
	if raw, ok := probe["format"]; ok && json.Unmarshal(raw, &format) == nil && format == ExportFormat {
		return parseExport(data, probe)
	}
	props, err := parsePlain(probe)
	return ImportFile{Props: props}, err
}

// parseExport reads a file Export wrote; probe is its members.
func parseExport(data []byte, probe map[string]json.RawMessage) (ImportFile, error) {
	var e Exported
	if err := strictjson.Unmarshal(data, &e); err != nil {
		return ImportFile{}, fmt.Errorf("a %s file that does not read: %w", ExportFormat, err)
	}
	raw, ok := probe["properties"]
	if !ok {
		return ImportFile{}, fmt.Errorf("a %s file without properties", ExportFormat)
	}
	if _, err := objectMembers(raw); err != nil {
		return ImportFile{}, fmt.Errorf("a %s file whose properties do not read: %w", ExportFormat, err)
	}
	f := ImportFile{Props: make(map[string]string, len(e.Properties)), Leased: map[string]string{}}
	for k, p := range e.Properties {
		if k == "" {
			return ImportFile{}, errors.New("a key is empty: keys are never empty")
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

// ImportResult says what an Import changed.
type ImportResult struct {
	Added, Updated, Unchanged, Removed int
	// AsSnapshot: too large for one update, the import was written as a
	// snapshot (see Import).
	AsSnapshot bool
}

// Import sets every key of props to its value as one update, so that it
// lands whole or not at all; with replace, the keys props lacks are removed
// in the same update. Keys that already have their value are not written.
// An update too large for one entry of the log is written as a snapshot of
// the state it makes instead (see importAsSnapshot): as conditional, as
// whole, but dropping the history before it, as compaction does.
func (c *Config) Import(ctx context.Context, props map[string]string, replace bool) (ImportResult, error) {
	strs := make([]string, 0, 2*len(props))
	for k, v := range props {
		strs = append(strs, k, v)
	}
	plan := func(s State) (updates, ImportResult) { return importUpdates(s, props, replace) }
	r, err := update(ctx, c, plan, strs...)
	if errors.Is(err, statesync.ErrTooLarge) {
		return c.importAsSnapshot(ctx, plan)
	}
	return r, err
}

// importAsSnapshot writes the state the import's updates make of the state
// read, on the condition that the log is still where it was read (see
// statesync.Replace). The keys it sets take the snapshot's revision.
func (c *Config) importAsSnapshot(ctx context.Context, plan func(State) (updates, ImportResult)) (ImportResult, error) {
	r, _, err := statesync.Replace(ctx, c.sync, func(s State) (statesync.InitialUpdate[State], ImportResult) {
		ups, r := plan(s)
		if len(ups) == 0 {
			return nil, r
		}
		set := make([]string, 0, len(ups))
		for _, u := range ups {
			s = u.Apply(s, 0)
			if p, ok := u.(putUpdate); ok {
				set = append(set, p.Key)
			}
		}
		r.AsSnapshot = true
		return importedSnapshot{State: s, set: set}, r
	})
	return r, err
}

// importUpdates is what an import of props does to s.
func importUpdates(s State, props map[string]string, replace bool) (updates, ImportResult) {
	var r ImportResult
	var ups updates
	if replace {
		for k := range s.All() {
			if _, keep := props[k]; !keep {
				ups = append(ups, removeUpdate{k})
				r.Removed++
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		old, ok := s.Lookup(k)
		switch {
		case !ok:
			r.Added++
		case old.Value == props[k] && old.Lease == "": // a plain put detaches a leased key
			r.Unchanged++
			continue
		default:
			r.Updated++
		}
		ups = append(ups, putUpdate{k, props[k]})
	}
	return ups, r
}
