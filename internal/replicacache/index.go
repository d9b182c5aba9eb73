package replicacache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"slices"
	"strconv"
)

// The index lets a process that wants one key (a one-shot get) take it
// from the file without decoding the whole copy: the config's properties
// in key order, each with its value, revision and lease, found by binary
// search. With the key it builds a checkpoint of a config that holds that
// key alone, and every lease (Lookup): the synchronizer resumes from that
// as from the whole copy and reads the entries written since, so the key
// ends as it would in the whole config (each update's effect on one key
// depends on that key and the leases only). The index section is
//
//	count            uint32, little-endian
//	head             uint32 length, then the checkpoint's first two lines
//	leases           uint32 length, then the snapshot's "leases" object (JSON), or nothing
//	offsets          count+1 uint32s: where each record starts, and the end
//	records          per property: key, value, lease (each a uvarint length
//	                 and the bytes) and revision (a uvarint), in key order
//
// The checkpoint is statesync's (its magic line, a header line, then the
// codec's snapshot) and the snapshot sharedconfig's wire form (see
// docs/wire.md); NewIndex refuses a checkpoint that is not so.

// Property is one key of a config, as the index keeps it.
type Property struct {
	Key, Value string
	Revision   uint64
	Lease      string
}

// ErrNoIndex: the file is trusted but holds no index.
var ErrNoIndex = errors.New("the cache file holds no index")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpointMagic opens a statesync checkpoint.
const checkpointMagic = "statesync-checkpoint 1\n"

// NewIndex builds the index of checkpoint, the copy of a config whose
// properties are props (in key order) and whose leases are named leases.
func NewIndex(checkpoint []byte, props iter.Seq[Property], leases []string) ([]byte, error) {
	head, body, err := splitCheckpoint(checkpoint)
	if err != nil {
		return nil, err
	}
	leaseJSON, err := leasesOf(body, leases)
	if err != nil {
		return nil, err
	}
	var records []byte
	offsets := []uint32{}
	last := ""
	for p := range props {
		if len(offsets) > 0 && p.Key <= last || p.Key == "" {
			return nil, fmt.Errorf("index: key %q does not follow %q", p.Key, last)
		}
		if len(records) > maxFile {
			return nil, errors.New("index: the config is larger than any cache file")
		}
		last = p.Key
		offsets = append(offsets, uint32(len(records)))
		for _, s := range []string{p.Key, p.Value, p.Lease} {
			records = binary.AppendUvarint(records, uint64(len(s)))
			records = append(records, s...)
		}
		records = binary.AppendUvarint(records, p.Revision)
	}
	offsets = append(offsets, uint32(len(records)))
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(offsets)-1))
	for _, part := range [][]byte{head, leaseJSON} {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(part)))
		out = append(out, part...)
	}
	for _, o := range offsets {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	return append(out, records...), nil
}

// splitCheckpoint cuts a checkpoint into its first two lines and the
// snapshot after them.
func splitCheckpoint(checkpoint []byte) (head, body []byte, err error) {
	rest, ok := bytes.CutPrefix(checkpoint, []byte(checkpointMagic))
	if !ok {
		return nil, nil, errors.New("index: not a statesync checkpoint")
	}
	line, body, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok || !bytes.HasPrefix(body, []byte(`{"properties":{`)) {
		return nil, nil, errors.New("index: not a checkpoint of a sharedconfig snapshot")
	}
	return checkpoint[:len(checkpointMagic)+len(line)+1], body, nil
}

// leasesOf is the "leases" object of the snapshot body, which must name
// exactly leases; nil when there are none.
func leasesOf(body []byte, leases []string) ([]byte, error) {
	// The snapshot is properties, revisions, then the lease fields. No
	// string can hold this (a quote in one is escaped), nor can a property's
	// value (a string) or revision (a number) be an object: the first one
	// ends the revisions.
	i := bytes.Index(body, []byte(`},"leases":{`))
	switch {
	case len(leases) == 0 && i >= 0:
		return nil, errors.New("index: the snapshot holds leases, the state none")
	case len(leases) == 0:
		return nil, nil
	case i < 0:
		return nil, errors.New("index: the snapshot holds no leases")
	}
	var tail struct {
		Leases  map[string]json.RawMessage `json:"leases"`
		LeaseOf map[string]string          `json:"lease_of"`
	}
	if err := json.Unmarshal(append([]byte("{"), body[i+2:]...), &tail); err != nil {
		return nil, fmt.Errorf("index: the snapshot's leases: %w", err)
	}
	if len(tail.Leases) != len(leases) {
		return nil, fmt.Errorf("index: the snapshot holds %d leases, the state %d", len(tail.Leases), len(leases))
	}
	for _, name := range leases {
		if _, ok := tail.Leases[name]; !ok {
			return nil, fmt.Errorf("index: the snapshot does not hold lease %q", name)
		}
	}
	return json.Marshal(tail.Leases)
}

// index is an index section, read: every access is checked against its
// length, so that no bytes make a lookup panic.
type index struct {
	count           int
	head, leases    []byte
	offsets, record []byte
}

// readIndex checks the layout of an index section.
func readIndex(b []byte) (index, bool) {
	var x index
	take := func(n int) ([]byte, bool) {
		if n < 0 || n > len(b) {
			return nil, false
		}
		part := b[:n]
		b = b[n:]
		return part, true
	}
	u32 := func() (int, bool) {
		p, ok := take(4)
		if !ok {
			return 0, false
		}
		return int(binary.LittleEndian.Uint32(p)), true
	}
	count, ok := u32()
	if !ok || count > len(b)/4 {
		return x, false
	}
	x.count = count
	for _, part := range []*[]byte{&x.head, &x.leases} {
		n, ok := u32()
		if !ok {
			return x, false
		}
		if *part, ok = take(n); !ok {
			return x, false
		}
	}
	if x.offsets, ok = take(4 * (count + 1)); !ok {
		return x, false
	}
	x.record = b
	return x, int(binary.LittleEndian.Uint32(x.offsets[4*count:])) == len(b)
}

// at decodes record i.
func (x index) at(i int) (Property, bool) {
	start := int(binary.LittleEndian.Uint32(x.offsets[4*i:]))
	end := int(binary.LittleEndian.Uint32(x.offsets[4*i+4:]))
	if start > end || end > len(x.record) {
		return Property{}, false
	}
	b := x.record[start:end]
	var fields [3]string
	for j := range fields {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return Property{}, false
		}
		fields[j], b = string(b[w:w+int(n)]), b[w+int(n):]
	}
	rev, w := binary.Uvarint(b)
	if w <= 0 || w != len(b) {
		return Property{}, false
	}
	return Property{Key: fields[0], Value: fields[1], Lease: fields[2], Revision: rev}, true
}

// find looks key up by binary search.
func (x index) find(key string) (p Property, found, ok bool) {
	lo, hi := 0, x.count
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		p, ok := x.at(mid)
		if !ok {
			return Property{}, false, false
		}
		switch {
		case p.Key == key:
			return p, true, true
		case p.Key < key:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return Property{}, false, true
}

// partial is a checkpoint of the config that holds, of the whole one's
// properties, key alone (p, if found), and all its leases.
func (x index) partial(key string, p Property, found bool) []byte {
	b := slices.Clone(x.head)
	jk, _ := json.Marshal(key)
	b = append(b, `{"properties":{`...)
	if found {
		jv, _ := json.Marshal(p.Value)
		b = append(append(append(b, jk...), ':'), jv...)
	}
	b = append(b, `},"revisions":{`...)
	if found {
		b = strconv.AppendUint(append(append(b, jk...), ':'), p.Revision, 10)
	}
	b = append(b, '}')
	if len(x.leases) > 0 {
		b = append(append(append(b, `,"leases":`...), x.leases...), `,"lease_of":{`...)
		if found && p.Lease != "" {
			jl, _ := json.Marshal(p.Lease)
			b = append(append(append(b, jk...), ':'), jl...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// headerMax bounds the read of a file's first two lines.
const headerMax = 64 << 10

// Lookup returns, from the file at path, if it can be trusted (as Load
// trusts one) and holds an index, a checkpoint of the config that holds,
// of the copy's properties, key alone (if the copy holds it), and all its
// leases; and the revision the copy stands at. A file without an index is
// ErrNoIndex; a damaged index, ErrUntrusted.
func Lookup(path string, want Stamp, key string) (checkpoint []byte, revision uint64, err error) {
	f, size, err := open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	start := make([]byte, min(size, headerMax))
	if _, err := io.ReadFull(f, start); err != nil {
		return nil, 0, err
	}
	h, n, err := parseHeader(path, start, size, want)
	if err != nil {
		return nil, 0, err
	}
	if h.IndexLength == 0 {
		return nil, 0, ErrNoIndex
	}
	section := make([]byte, h.IndexLength)
	if _, err := f.ReadAt(section, int64(n)+int64(h.Length)); err != nil {
		return nil, 0, err
	}
	if crc32.Checksum(section, castagnoli) != h.IndexCRC {
		return nil, 0, fmt.Errorf("%w: %s: its index is damaged", ErrUntrusted, path)
	}
	x, ok := readIndex(section)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s: its index does not add up", ErrUntrusted, path)
	}
	p, found, ok := x.find(key)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s: its index holds a damaged record", ErrUntrusted, path)
	}
	return x.partial(key, p, found), h.Revision, nil
}
