// Package exportfile is the file "sharedconfig export" writes and
// "sharedconfig import" reads: its format, and reading it back without
// importing anything other than what the file seems to say.
//
// It is a package of its own because the format is a promise to files on
// disk, scripts and people, which changes on its own schedule, and it needs
// nothing of a config's inside: it builds a File from a config's State,
// and Parse gives the keys and values that Config.Import takes.
// The arrow runs one way: exportfile uses sharedconfig, never the reverse.
// It is not internal because a program using sharedconfig as a library
// may want to write and read the same files.
package exportfile

import (
	"maps"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// Format marks a file that export wrote.
const Format = "sharedconfig-export/1"

// File is a config as a file holds it.
type File struct {
	Format     string              `json:"format"`
	Scope      string              `json:"scope"`
	Name       string              `json:"name"`
	Revision   uint64              `json:"revision"`
	Exported   time.Time           `json:"exported"`
	Properties map[string]Property `json:"properties"`
	// Leases are the leases the properties name, as they stood: a record,
	// not something an import recreates (a lease lives as long as its
	// holder, a running process, keeps it alive).
	Leases map[string]Lease `json:"leases,omitempty"`
}

// Property is one value and the revision that set it, and the lease it is
// attached to, if any.
type Property struct {
	Value    string `json:"value"`
	Revision uint64 `json:"revision"`
	Lease    string `json:"lease,omitempty"`
}

// Lease is a lease as it stood at the export.
type Lease struct {
	Holder   string    `json:"holder"`
	TTL      string    `json:"ttl"`      // as the shell shows it: 10s, 1m30s
	Deadline time.Time `json:"deadline"` // by the server's clock
}

// New is the file of the config scope/name whose state is s (what
// Config.State returns: it knows its revision).
func New(scope, name string, s sharedconfig.State) File {
	f := File{Format: Format, Scope: scope, Name: name, Revision: s.Revision(), Exported: time.Now().UTC(), Properties: map[string]Property{}}
	for k, p := range s.All() {
		f.Properties[k] = Property{Value: p.Value, Revision: p.Revision, Lease: p.Lease}
	}
	for name, l := range s.Leases() {
		if f.Leases == nil {
			f.Leases = map[string]Lease{}
		}
		f.Leases[name] = Lease{Holder: l.Holder, TTL: l.TTL.String(), Deadline: l.Deadline.UTC()}
	}
	return f
}

// Import is what a file to import holds.
type Import struct {
	Props map[string]string
	// Leased maps each key the file marks as attached to a lease (an
	// export of a key put with a lease) to its lease.
	Leased map[string]string
}

// WithoutLeased returns the file's keys and values but its leased keys.
func (f Import) WithoutLeased() map[string]string {
	props := maps.Clone(f.Props)
	for k := range f.Leased {
		delete(props, k)
	}
	return props
}
