package sharedconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
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
}

// ExportedProperty is one value and the revision that set it.
type ExportedProperty struct {
	Value    string `json:"value"`
	Revision uint64 `json:"revision"`
}

// Export describes the local copy as a file would hold it.
func (c *Config) Export(scope, name string) Exported {
	st, _ := c.sync.State()
	e := Exported{Format: ExportFormat, Scope: scope, Name: name, Revision: st.Revision, Exported: time.Now().UTC(), Properties: map[string]ExportedProperty{}}
	for k, p := range st.Value.All() {
		e.Properties[k] = ExportedProperty{p.Value, p.Revision}
	}
	return e
}

// ParseImport reads what Export writes, or a plain JSON object of keys to
// string values, and returns the keys and values.
func ParseImport(data []byte) (map[string]string, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	var format string
	if raw, ok := probe["format"]; ok && json.Unmarshal(raw, &format) == nil && format == ExportFormat {
		var e Exported
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("a %s file that does not read: %w", ExportFormat, err)
		}
		props := make(map[string]string, len(e.Properties))
		for k, p := range e.Properties {
			props[k] = p.Value
		}
		return props, nil
	}
	props := make(map[string]string, len(probe))
	for k, raw := range probe {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || string(raw) == "null" {
			return nil, fmt.Errorf("key %q: its value is %s, not a string (quote numbers and booleans)", k, abbreviate(raw))
		}
		props[k] = v
	}
	return props, nil
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
}

// Import sets every key of props to its value as one update, so that it
// lands whole or not at all; with replace, the keys props lacks are removed
// in the same update. Keys that already have their value are not written.
func (c *Config) Import(ctx context.Context, props map[string]string, replace bool) (ImportResult, error) {
	strs := make([]string, 0, 2*len(props))
	for k, v := range props {
		strs = append(strs, k, v)
	}
	return update(ctx, c, func(s State) (updates, ImportResult) {
		var r ImportResult
		var ups updates
		if replace {
			for k := range s.All() {
				if _, keep := props[k]; !keep {
					ups = append(ups, Remove{k})
					r.Removed++
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(props)) {
			old, ok := s.Get(k)
			switch {
			case !ok:
				r.Added++
			case old == props[k]:
				r.Unchanged++
				continue
			default:
				r.Updated++
			}
			ups = append(ups, Put{k, props[k]})
		}
		return ups, r
	}, strs...)
}
