package sharedconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The wire form of the lease operations, beside put, remove and clear:
//
//	{"op":"put","key":"k","value":"v","lease":"L"}        put attached to lease L
//	{"op":"register_lease","lease":"L","holder":"h","ttl_ms":10000}
//	{"op":"refresh_lease","lease":"L","holder":"h","registration":12}
//	{"op":"revoke_lease","lease":"L","holder":"h","registration":12}
//	{"op":"expire_lease","lease":"L"}
//
// where registration (absent in entries written before leases had one)
// names the registration refreshed or revoked: the revision of the
// register_lease that made it. A snapshot that holds leases adds
//
//	"leases":{"L":{"holder":"h","registration":12,"ttl_ms":10000,"deadline":"<RFC 3339>","watched":true}},
//	"lease_of":{"k":"L"}
//
// and one without leases is written without lease fields, so readers
// without lease support read it.

// wireLeaseFields are the fields of an op that lease operations use;
// entries written before leases lack them.
type wireLeaseFields struct {
	Lease  *string `json:"lease,omitempty"`
	Holder *string `json:"holder,omitempty"`
	TTLms  *int64  `json:"ttl_ms,omitempty"`
	// Registration: refresh and revoke name the registration they are for.
	Registration *uint64 `json:"registration,omitempty"`
}

func encodeLeaseOp(u statesync.Update[State]) (wireOp, bool) {
	switch u := u.(type) {
	case putWithLease:
		return wireOp{Op: "put", Key: &u.Key, Value: &u.Value, wireLeaseFields: wireLeaseFields{Lease: &u.Lease}}, true
	case registerLease:
		ms := u.TTL.Milliseconds()
		return wireOp{Op: "register_lease", wireLeaseFields: wireLeaseFields{Lease: &u.Lease, Holder: &u.Holder, TTLms: &ms}}, true
	case refreshLease:
		return wireOp{Op: "refresh_lease", wireLeaseFields: wireLeaseFields{Lease: &u.Lease, Holder: &u.Holder, Registration: registrationOf(u.Registration)}}, true
	case revokeLease:
		return wireOp{Op: "revoke_lease", wireLeaseFields: wireLeaseFields{Lease: &u.Lease, Holder: &u.Holder, Registration: registrationOf(u.Registration)}}, true
	case expireLease:
		return wireOp{Op: "expire_lease", wireLeaseFields: wireLeaseFields{Lease: &u.Lease}}, true
	}
	return wireOp{}, false
}

// registrationOf is a registration's wire form: none for 0.
func registrationOf(r uint64) *uint64 {
	if r == 0 {
		return nil
	}
	return &r
}

// decodeLeaseOp decodes op if it is a well-formed lease operation.
func decodeLeaseOp(op wireOp) (statesync.Update[State], bool) {
	if op.Lease == nil {
		return nil, false
	}
	kv := op.Key != nil || op.Value != nil
	var reg uint64
	if op.Registration != nil {
		if *op.Registration == 0 || op.Op != "refresh_lease" && op.Op != "revoke_lease" {
			return nil, false
		}
		reg = *op.Registration
	}
	switch {
	case op.Op == "put" && op.Key != nil && op.Value != nil && op.Holder == nil && op.TTLms == nil:
		return putWithLease{*op.Key, *op.Value, *op.Lease}, true
	case kv:
		return nil, false
	case op.Op == "register_lease" && op.Holder != nil && op.TTLms != nil && validTTLms(*op.TTLms):
		return registerLease{*op.Lease, *op.Holder, time.Duration(*op.TTLms) * time.Millisecond}, true
	case op.TTLms != nil:
		return nil, false
	case op.Op == "refresh_lease" && op.Holder != nil:
		return refreshLease{*op.Lease, *op.Holder, reg}, true
	case op.Op == "revoke_lease" && op.Holder != nil:
		return revokeLease{*op.Lease, *op.Holder, reg}, true
	case op.Op == "expire_lease" && op.Holder == nil:
		return expireLease{*op.Lease}, true
	}
	return nil, false
}

// validTTLms: a ttl Register would take. A shorter one (written by some
// other program) could never be watched falling due, so every keeper would
// witness it for ever; a longer one may not fit a time.Duration.
func validTTLms(ms int64) bool {
	return ms >= lease.MinTTL.Milliseconds() && ms <= lease.MaxTTL.Milliseconds()
}

type wireLease struct {
	Holder       string    `json:"holder"`
	Registration uint64    `json:"registration,omitempty"`
	TTLms        int64     `json:"ttl_ms"`
	Deadline     time.Time `json:"deadline"`
	Watched      bool      `json:"watched,omitempty"`
}

// wireSnapshotLeases is the part of a snapshot that carries leases.
type wireSnapshotLeases struct {
	Leases  map[string]wireLease `json:"leases,omitempty"`
	LeaseOf map[string]string    `json:"lease_of,omitempty"`
}

// snapshot adds the leases to s, a snapshot's properties.
func (w wireSnapshotLeases) snapshot(s State) (statesync.InitialUpdate[State], error) {
	for k, name := range w.LeaseOf {
		if _, ok := w.Leases[name]; !ok {
			return nil, fmt.Errorf("not a sharedconfig snapshot: key %q is attached to lease %q, which it does not hold", k, name)
		}
		if _, ok := s.Lookup(k); !ok {
			return nil, fmt.Errorf("not a sharedconfig snapshot: lease_of names key %q, which it does not hold", k)
		}
	}
	for name, l := range w.Leases {
		if !validTTLms(l.TTLms) {
			return nil, fmt.Errorf("not a sharedconfig snapshot: lease %q has ttl_ms %d, not %d to %d", name, l.TTLms, lease.MinTTL.Milliseconds(), lease.MaxTTL.Milliseconds())
		}
		s = s.setLease(name, leaseRecord{Lease: lease.Lease{Holder: l.Holder, Registration: l.Registration, TTL: time.Duration(l.TTLms) * time.Millisecond, Deadline: l.Deadline}, watched: l.Watched})
	}
	return snapshotUpdate{s}, nil
}

// encodeSnapshotLeases appends the lease fields of a snapshot of s, if it
// holds leases.
func encodeSnapshotLeases(b *bytes.Buffer, s State) error {
	if s.leases == nil || s.leases.Len() == 0 {
		return nil
	}
	w := wireSnapshotLeases{Leases: map[string]wireLease{}, LeaseOf: map[string]string{}}
	for name, l := range s.leaseRecords() {
		w.Leases[name] = wireLease{Holder: l.Holder, Registration: l.Registration, TTLms: l.TTL.Milliseconds(), Deadline: l.Deadline, Watched: l.watched}
	}
	for k, p := range s.All() {
		if p.Lease != "" {
			w.LeaseOf[k] = p.Lease
		}
	}
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	b.WriteByte(',')
	b.Write(data[1 : len(data)-1]) // the fields, without the braces
	return nil
}
