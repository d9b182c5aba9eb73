package sharedconfig

import (
	"slices"
	"strings"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// How the lease operations show in a config's changes (History, Watch):
// their ops, and the leases an entry ended with the keys that went.

// endsLeases: ch expires or revokes a lease, so what it ended depends on
// the state before it.
func endsLeases(ch Change) bool {
	return slices.ContainsFunc(ch.Ops, func(op Op) bool { return op.Kind == "expire_lease" || op.Kind == "revoke_lease" })
}

// leaseOp describes u as an Op, if it is a lease operation.
func leaseOp(u statesync.Update[State]) (Op, bool) {
	w, ok := encodeLeaseOp(u)
	if !ok {
		return Op{}, false
	}
	op := Op{Kind: w.Op, Lease: *w.Lease}
	if w.Key != nil {
		op.Key, op.Value = *w.Key, *w.Value
	}
	if w.Holder != nil {
		op.Holder = *w.Holder
	}
	if w.TTLms != nil {
		op.TTL = time.Duration(*w.TTLms) * time.Millisecond
	}
	if w.Registration != nil {
		op.Registration = *w.Registration
	}
	return op, true
}

// endedLeases are the leases present before an entry and gone after it.
func endedLeases(before, after State, us []statesync.Update[State]) []lease.Ended {
	var ended []lease.Ended
	for name := range before.leaseRecords() {
		if _, ok := after.lease(name); ok {
			continue
		}
		expired := slices.ContainsFunc(us, func(u statesync.Update[State]) bool { return u == expireLease{name} })
		ended = append(ended, lease.Ended{Name: name, Keys: before.leaseKeys(name), Expired: expired})
	}
	return ended
}

// changeWithLeases describes an entry as changeOf does, adding the leases
// it ended.
func changeWithLeases(a statesync.Applied[State]) Change {
	ch := changeOf(a.Entry, a.Updates, a.After, a.Local)
	if len(ch.Ops) == len(a.Updates) {
		for i := range ch.Ops {
			ch.Ops[i].Local = a.LocalUpdate(i)
		}
	}
	if a.HasStates && !a.Entry.Snapshot && a.Entry.Foreign == "" {
		ch.Ended = endedLeases(a.Before, a.After, a.Updates)
	}
	return ch
}

// endedUnder narrows the leases an entry ended to their keys under prefix,
// and adds to ops the expiry or revocation that removed them: a watch of a
// prefix sees a lease's end only when it removed keys there.
func endedUnder(ended []lease.Ended, ops []Op, a statesync.Applied[State], prefix string) ([]lease.Ended, []Op) {
	var kept []lease.Ended
	for _, e := range ended {
		var keys []string
		for _, k := range e.Keys {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		e.Keys = keys
		kept = append(kept, e)
		for i, op := range opsOf(a.Updates) {
			if op.Lease == e.Name && (op.Kind == "expire_lease" || op.Kind == "revoke_lease") {
				op.Local = a.LocalUpdate(i)
				ops = append(ops, op)
			}
		}
	}
	return kept, ops
}
