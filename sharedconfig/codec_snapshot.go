package sharedconfig

import (
	"strconv"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// decodeCanonicalSnapshot parses exactly what EncodeInitial writes, without
// reflection or maps: the properties in key order, then their revisions in
// the same order, then the lease fields if any. A new process decodes a
// whole config this way (a join after compaction, a start from the replica
// cache), so it is the hot path of every start. On anything else (other
// order or spacing, escapes, duplicate keys, a revision 0) it gives up and
// the strict decoder decides, so both accept and refuse the same snapshots.
func decodeCanonicalSnapshot(data []byte) (statesync.InitialUpdate[State], bool) {
	p := canonical{data}
	if !p.lit(`{"properties":{`) {
		return nil, false
	}
	var es []entry
	for !p.lit("}") {
		if len(es) > 0 && !p.lit(",") {
			return nil, false
		}
		k, ok1 := p.str()
		ok2 := p.lit(":")
		v, ok3 := p.str()
		if !ok1 || !ok2 || !ok3 || k == "" || len(es) > 0 && es[len(es)-1].key >= k {
			return nil, false
		}
		es = append(es, entry{key: k, Property: Property{Value: v}})
	}
	if !p.lit(`,"revisions":{`) {
		return nil, false
	}
	for i := range es {
		if i > 0 && !p.lit(",") {
			return nil, false
		}
		k, ok1 := p.str()
		ok2 := p.lit(":")
		rev, ok3 := p.revision()
		if !ok1 || !ok2 || !ok3 || k != es[i].key {
			return nil, false
		}
		es[i].Revision = rev
	}
	if !p.lit("}") {
		return nil, false
	}
	var leases wireSnapshotLeases
	if !p.lit("}") {
		// The lease fields: few, so the strict decoder reads them.
		if len(p.rest) < 2 || p.rest[0] != ',' || strictUnmarshal(append([]byte("{"), p.rest[1:]...), &leases) != nil {
			return nil, false
		}
		for i := range es {
			es[i].Lease = leases.LeaseOf[es[i].key]
		}
	} else if len(p.rest) != 0 {
		return nil, false
	}
	init, err := leases.snapshot(State{root: build(es)})
	return init, err == nil
}

// revision takes a revision above 0: digits, no leading zero.
func (p *canonical) revision() (uint64, bool) {
	n := 0
	for n < len(p.rest) && p.rest[n] >= '0' && p.rest[n] <= '9' {
		n++
	}
	if n == 0 || p.rest[0] == '0' {
		return 0, false
	}
	rev, err := strconv.ParseUint(string(p.rest[:n]), 10, 64)
	if err != nil {
		return 0, false
	}
	p.rest = p.rest[n:]
	return rev, true
}
