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
	"os"
	"slices"
	"strconv"
	"time"
)

// The index lets a process that wants one key (a one-shot get) take it
// from the file without decoding the whole copy, nor reading all of it: the
// config's properties in key order, each with its value, revision and
// lease, found by binary search. With the key it builds a checkpoint of a
// config that holds that key alone, and every lease (Lookup): the
// synchronizer resumes from that as from the whole copy and reads the
// entries written since, so the key ends as it would in the whole config
// (each update's effect on one key depends on that key and the leases
// only). The index section is
//
//	prefix length    uint32, little-endian (as every number here but those in records)
//	prefix           count (uint32); the checkpoint's first two lines and the
//	                 snapshot's "leases" object (JSON; empty when there are
//	                 none), each a uint32 length and the bytes; their CRC-32C
//	offsets          count+1 uint32s: where each record starts after them, and their end
//	records          per property, in key order: its place in that order
//	                 (uint32), key, value, lease (each a uvarint length and
//	                 the bytes), revision (a uvarint), then the CRC-32C of
//	                 the record
//
// A lookup reads the prefix and, for each step of its search, two offsets
// and a record, and checks the CRCs. An offset is not checked by a CRC: a
// damaged one points at bytes whose CRC fails, or at another record, which
// names its own place.
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
		start := len(records)
		records = binary.LittleEndian.AppendUint32(records, uint32(len(offsets)))
		offsets = append(offsets, uint32(start))
		for _, s := range []string{p.Key, p.Value, p.Lease} {
			records = binary.AppendUvarint(records, uint64(len(s)))
			records = append(records, s...)
		}
		records = binary.AppendUvarint(records, p.Revision)
		records = binary.LittleEndian.AppendUint32(records, crc32.Checksum(records[start:], castagnoli))
	}
	offsets = append(offsets, uint32(len(records)))
	prefix := binary.LittleEndian.AppendUint32(nil, uint32(len(offsets)-1))
	for _, part := range [][]byte{head, leaseJSON} {
		prefix = binary.LittleEndian.AppendUint32(prefix, uint32(len(part)))
		prefix = append(prefix, part...)
	}
	prefix = binary.LittleEndian.AppendUint32(prefix, crc32.Checksum(prefix, castagnoli))
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(prefix)))
	out = append(out, prefix...)
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
	count        int
	head, leases []byte
	// read reads len(p) bytes at off of the section (as io.ReaderAt).
	read             func(p []byte, off int64) (int, error)
	offsets, records int64 // where they start
	size             int64 // of the records
}

// errDamaged: the index's bytes do not add up, or fail their CRC.
var errDamaged = errors.New("its index is damaged")

// readIndex reads the prefix of the index section of size bytes that read
// reads, and checks that the rest adds up.
func readIndex(read func(p []byte, off int64) (int, error), size int64) (index, error) {
	x := index{read: read}
	n, err := x.u32(0)
	if err != nil {
		return x, err
	}
	if n < 4 || int64(n) > size-4 {
		return x, errDamaged
	}
	prefix := make([]byte, n)
	if _, err := read(prefix, 4); err != nil {
		return x, err
	}
	body, sum := prefix[:n-4], binary.LittleEndian.Uint32(prefix[n-4:])
	if crc32.Checksum(body, castagnoli) != sum || !x.parsePrefix(body) {
		return x, errDamaged
	}
	x.offsets = 4 + int64(n)
	x.records = x.offsets + 4*int64(x.count+1)
	if x.records > size {
		return x, errDamaged
	}
	x.size = size - x.records
	end, err := x.u32(x.offsets + 4*int64(x.count))
	if err != nil || int64(end) != x.size {
		return x, errDamaged
	}
	return x, nil
}

// u32 reads the number at off.
func (x index) u32(off int64) (uint32, error) {
	var b [4]byte
	if _, err := x.read(b[:], off); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// parsePrefix takes the prefix's parts from b, whose CRC was checked.
func (x *index) parsePrefix(b []byte) bool {
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
	if !ok || count >= maxFile/4 {
		return false
	}
	x.count = count
	for _, part := range []*[]byte{&x.head, &x.leases} {
		n, ok := u32()
		if !ok {
			return false
		}
		if *part, ok = take(n); !ok {
			return false
		}
	}
	return len(b) == 0
}

// at reads and decodes record i.
func (x index) at(i int) (Property, error) {
	var o [8]byte
	if _, err := x.read(o[:], x.offsets+4*int64(i)); err != nil {
		return Property{}, err
	}
	start, end := int64(binary.LittleEndian.Uint32(o[:4])), int64(binary.LittleEndian.Uint32(o[4:]))
	if start+8 > end || end > x.size {
		return Property{}, errDamaged
	}
	b := make([]byte, end-start)
	if _, err := x.read(b, x.records+start); err != nil {
		return Property{}, err
	}
	b, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(b, castagnoli) != sum || binary.LittleEndian.Uint32(b) != uint32(i) {
		return Property{}, errDamaged
	}
	b = b[4:]
	var fields [3]string
	for j := range fields {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return Property{}, errDamaged
		}
		fields[j], b = string(b[w:w+int(n)]), b[w+int(n):]
	}
	rev, w := binary.Uvarint(b)
	if w <= 0 || w != len(b) {
		return Property{}, errDamaged
	}
	return Property{Key: fields[0], Value: fields[1], Lease: fields[2], Revision: rev}, nil
}

// find looks key up by binary search.
func (x index) find(key string) (p Property, found bool, err error) {
	lo, hi := 0, x.count
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		p, err := x.at(mid)
		if err != nil {
			return Property{}, false, err
		}
		switch {
		case p.Key == key:
			return p, true, nil
		case p.Key < key:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return Property{}, false, nil
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

// readStart reads the start of the file f of size bytes: enough for its
// first two lines, if they are at most headerMax long.
func readStart(f *os.File, size int64) ([]byte, error) {
	start := make([]byte, min(size, 4096))
	if _, err := io.ReadFull(f, start); err != nil {
		return nil, err
	}
	if bytes.Count(start, []byte{'\n'}) >= 2 || size <= int64(len(start)) {
		return start, nil
	}
	more := make([]byte, min(size, headerMax)-int64(len(start)))
	if _, err := io.ReadFull(f, more); err != nil {
		return nil, err
	}
	return append(start, more...), nil
}

// Lookup returns, from the file at path, if it can be trusted (as Load
// trusts one) and holds an index, a checkpoint of the config that holds,
// of the copy's properties, key alone (if the copy holds it), and all its
// leases; and the revision the copy stands at. A file without an index is
// ErrNoIndex; a damaged index, ErrUntrusted.
func Lookup(path string, want Stamp, key string) (checkpoint []byte, revision uint64, err error) {
	err = inIndex(path, want, false, func(x index, h header) error {
		p, found, err := x.find(key)
		if err != nil {
			return err
		}
		checkpoint, revision = x.partial(key, p, found), h.Revision
		return nil
	})
	return checkpoint, revision, err
}

// Peeked is what Peek found.
type Peeked struct {
	Property Property
	Found    bool // the copy holds the key
	// Revision is where the copy stands, ID the ID of the log's entry
	// there, and Time the log's time on it.
	Revision uint64
	ID       string
	Time     time.Time
	// DirectGets is the file's Stamp.DirectGets.
	DirectGets bool
}

// Peek returns, from the file at path, if it can be trusted as Lookup's
// is and holds an index, key's property in the copy and where the copy
// stands, without the stream's creation time (want.Created is ignored):
// the caller binds the copy to the log by the entry it stands at, its ID
// and the log's time on it.
func Peek(path string, want Stamp, key string) (Peeked, error) {
	var got Peeked
	err := inIndex(path, want, true, func(x index, h header) error {
		var pos struct {
			Revision uint64    `json:"revision"`
			ID       string    `json:"id"`
			Time     time.Time `json:"time"`
		}
		line, _, _ := bytes.Cut(bytes.TrimPrefix(x.head, []byte(checkpointMagic)), []byte{'\n'})
		if err := json.Unmarshal(line, &pos); err != nil || pos.Revision != h.Revision || pos.ID == "" || pos.Time.IsZero() {
			return errDamaged
		}
		var err error
		got.Property, got.Found, err = x.find(key)
		got.Revision, got.ID, got.Time, got.DirectGets = pos.Revision, pos.ID, pos.Time, h.DirectGets
		return err
	})
	return got, err
}

// inIndex calls fn with the index of the file at path, if the file can be
// trusted and holds one (with anyCreated, whenever the stream was created).
func inIndex(path string, want Stamp, anyCreated bool, fn func(x index, h header) error) error {
	f, size, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start, err := readStart(f, size)
	if err != nil {
		return err
	}
	h, n, err := parseHeader(path, start, size, want, anyCreated)
	if err != nil {
		return err
	}
	if h.IndexLength == 0 {
		return ErrNoIndex
	}
	base := int64(n) + int64(h.Length)
	x, err := readIndex(func(p []byte, off int64) (int, error) { return f.ReadAt(p, base+off) }, int64(h.IndexLength))
	if err == nil {
		err = fn(x, h)
	}
	if errors.Is(err, errDamaged) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: %w", ErrUntrusted, path, errDamaged)
	}
	return err
}
