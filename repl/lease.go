package repl

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// The lease commands (sharedconfig's leases: keys that live as long as
// their holder keeps them alive), and how lease operations are shown.

func leaseRows() []*command {
	lease := param{name: "lease", kind: leaseParam}
	name := param{name: "name", kind: leaseParam, noun: "lease name"}
	return []*command{
		{name: "REGISTER_LEASE", help: "create the lease {name}, held by this shell, which keeps it alive while it runs (or renew it with a new {ttl}); {ttl} is a duration such as 10s, or a number of seconds.",
			params: []param{name, {name: "ttl", kind: ttlParam}}, run: runRegisterLease},
		{name: "REFRESH_LEASE", help: "move the deadline of a lease this shell holds to its ttl from now (the shell also does it by itself).",
			params: []param{name}, run: runRefreshLease},
		{name: "REVOKE_LEASE", help: "end a lease this shell holds at once, removing its keys.",
			params: []param{name}, run: runRevokeLease},
		{name: "LEASES", help: "print the leases: holder, ttl, the keys attached, and the time left by the server's clock.", run: runLeases},
		{name: "PUT_WITH_LEASE", help: "update the Shared Config with the given key/value pair, attached to a lease this shell holds: the key goes when the lease ends.",
			params: []param{{name: "key", kind: keyParam}, {name: "value", kind: valueParam}, lease}, run: runPutWithLease},
	}
}

// leaseFailure is one clear line for a lease operation that failed.
func (sh *Shell) leaseFailure(name string, err error) reply {
	var r reply
	switch {
	case errors.Is(err, lease.ErrUnknown):
		r = refuse("Unknown lease: '%s' (LEASES lists the leases)", name)
	case errors.Is(err, lease.ErrHeld):
		r = refuse("Lease '%s' is held by another writer %s", name, strings.TrimPrefix(err.Error(), lease.ErrHeld.Error()+" "))
	case errors.Is(err, lease.ErrEnded):
		r = refuse("Lease '%s' had ended before this refresh reached the server (it expired, or was revoked); nothing was changed", name)
	case errors.Is(err, lease.ErrNotMine):
		r = refuse("Lease '%s' is held by this writer under a registration another process made (or this shell's registration ended and it was registered again): only that process refreshes, revokes or puts under it; nothing was changed", name)
	case errors.Is(err, lease.ErrExpired):
		r = refuse("Lease '%s' is past its deadline by the server's clock and is expiring; nothing was changed", name)
	default:
		return sh.failure(err)
	}
	return r
}

func runRegisterLease(ctx context.Context, sh *Shell, args []string) reply {
	name := args[0]
	ttl, _ := lease.ParseTTL(args[1]) // checked
	renewed, err := sh.cfg.Leases().Register(ctx, name, ttl)
	if err != nil {
		return sh.leaseFailure(name, err)
	}
	f := fields{"lease": name, "ttl": ttl.String(), "holder": sh.cfg.Leases().Holder(), "renewed": renewed}
	if renewed {
		return answer(say("Lease '%s' renewed with ttl %s", name, ttl.String()), f)
	}
	return answer(say("Lease '%s' registered with ttl %s, held by %s", name, ttl.String(), sh.cfg.Leases().Holder()), f)
}

func runRefreshLease(ctx context.Context, sh *Shell, args []string) reply {
	name := args[0]
	l, err := sh.cfg.Leases().Refresh(ctx, name)
	if errors.Is(err, statesync.ErrUnknownOutcome) && !sh.cancelled.Load() {
		// Unconditional, so it cannot be looked up; but, unlike a change,
		// it is safe to send again.
		return refuse("Lease '%s' may or may not have been refreshed (a refresh cannot be looked up); sending it again is safe, and the shell keeps refreshing it by itself (%v)", name, err)
	}
	if err != nil {
		return sh.leaseFailure(name, err)
	}
	return answer(say("Lease '%s' refreshed: %s left", name, l.TTL.String()), fields{"lease": name, "ttl": l.TTL.String(), "deadline": l.Deadline.UTC().Format(time.RFC3339Nano)})
}

func runRevokeLease(ctx context.Context, sh *Shell, args []string) reply {
	name := args[0]
	keys, err := sh.cfg.Leases().Revoke(ctx, name)
	if err != nil {
		return sh.leaseFailure(name, err)
	}
	f := fields{"lease": name, "removed": nonNil(keys)}
	if len(keys) == 0 {
		return answer(say("Lease '%s' revoked; it held no keys", name), f)
	}
	return answer(say("Lease '%s' revoked; removed %s: %s", name, Counted(len(keys), "key", "keys"), quoteAll(keys)), f)
}

func runLeases(_ context.Context, sh *Shell, _ []string) reply {
	if r, gone := sh.unknown(); gone {
		return r
	}
	leases := sh.cfg.Leases().List()
	list := []fields{}
	if len(leases) == 0 {
		return answer(say("No leases in SharedConfig: '%s'", sh.name), fields{"leases": list})
	}
	now := sh.cfg.Leases().Now()
	r := answer(say("Leases of SharedConfig: '%s' (time left by the server's clock, as last seen):", sh.name), nil)
	t := &table{header: []string{"Lease", "Holder", "TTL", "Keys", "Time left"}}
	for _, l := range leases {
		left := l.Deadline.Sub(now).Round(100 * time.Millisecond)
		shownLeft := left.String()
		if left <= 0 {
			shownLeft = "due (expiring)"
		}
		holder := l.Holder
		if l.Mine {
			holder += " (this shell)"
		}
		t.rows = append(t.rows, []string{l.Name, holder, l.TTL.String(), strings.Join(l.Keys, ", "), shownLeft})
		list = append(list, fields{"lease": l.Name, "holder": l.Holder, "mine": l.Mine, "ttl": l.TTL.String(),
			"keys": nonNil(l.Keys), "deadline": l.Deadline.UTC().Format(time.RFC3339Nano), "time_left_ms": max(left.Milliseconds(), 0)})
	}
	r.table = t
	r.result = fields{"leases": list}
	return r
}

func runPutWithLease(ctx context.Context, sh *Shell, args []string) reply {
	key, value, lease := args[0], args[1], args[2]
	r, err := sh.cfg.Put(ctx, key, value, sharedconfig.WithLease(lease))
	if err != nil {
		return sh.leaseFailure(lease, err)
	}
	old, existed := r.Previous.Value, r.Existed
	f := fields{"key": key, "value": value, "lease": lease, "existed": existed}
	if existed {
		f["previous"] = old
		return answer(say("Property '%s' updated from: '%s' to: '%s', under lease '%s'", key, old, value, lease), f)
	}
	return answer(say("Property '%s' added with value '%s', under lease '%s'", key, value, lease), f)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = previewQuoted(k)
	}
	return strings.Join(q, ", ")
}

// describeLeaseOp is a lease operation as LOG and follow mode show it.
func describeLeaseOp(op sharedconfig.Op) (operation, arguments string, ok bool) {
	switch op.Kind {
	case "put":
		return "PUT_WITH_LEASE", previewQuoted(op.Key) + " , " + previewQuoted(op.Value) + " , " + previewQuoted(op.Lease), op.Lease != ""
	case "register_lease":
		return "REGISTER_LEASE", previewQuoted(op.Lease) + " , " + op.TTL.String() + " held by " + previewQuoted(op.Holder), true
	case "refresh_lease":
		return "REFRESH_LEASE", previewQuoted(op.Lease), true
	case "revoke_lease":
		return "REVOKE_LEASE", previewQuoted(op.Lease), true
	case "expire_lease":
		return "EXPIRE_LEASE", previewQuoted(op.Lease), true
	}
	return "", "", false
}

// describeEnded says which leases a change ended, and their keys.
func describeEnded(ended []lease.Ended) string {
	var parts []string
	for _, e := range ended {
		how := "revoked"
		if e.Expired {
			how = "expired"
		}
		part := "lease " + previewQuoted(e.Name) + " " + how
		if len(e.Keys) > 0 {
			part += ", removing " + quoteAll(e.Keys)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// leaseOpFields adds a lease operation's fields to its JSON form.
func leaseOpFields(o fields, op sharedconfig.Op) {
	if op.Lease != "" {
		o["lease"] = op.Lease
	}
	if op.Holder != "" {
		o["holder"] = op.Holder
	}
	if op.TTL != 0 {
		o["ttl"] = op.TTL.String()
	}
	if op.Registration != 0 {
		o["registration"] = op.Registration
	}
}

func endedFields(ended []lease.Ended) []fields {
	list := []fields{}
	for _, e := range ended {
		list = append(list, fields{"lease": e.Name, "expired": e.Expired, "keys": nonNil(e.Keys)})
	}
	return list
}

// quietChange: a change follow mode does not show, since it changes
// nothing anyone reads: a lease's refresh, or an expiry that was not due.
// LOG lists them.
func quietChange(ch sharedconfig.Change) bool {
	if len(ch.Ops) == 0 || len(ch.Ended) > 0 {
		return false
	}
	for _, op := range ch.Ops {
		if op.Kind != "refresh_lease" && op.Kind != "expire_lease" {
			return false
		}
	}
	return true
}

// witness: the change is expiries that ended nothing. Before a lease's
// deadline an expiry only records the log's time.
func witness(ch sharedconfig.Change) bool {
	if len(ch.Ops) == 0 || len(ch.Ended) > 0 {
		return false
	}
	for _, op := range ch.Ops {
		if op.Kind != "expire_lease" {
			return false
		}
	}
	return true
}

// expiry: the change ended a lease that fell due. Follow mode shows it even
// when this shell wrote it: its keeper did, not its user.
func expiry(ch sharedconfig.Change) bool {
	for _, e := range ch.Ended {
		if e.Expired {
			return true
		}
	}
	return false
}

// KeepLeases runs while the shell takes commands (Run calls it; a caller
// that feeds Execute itself calls it around them): it keeps the leases the
// shell holds alive and writes the expiry of leases that fall due. The
// returned function is the shell's leaving: it stops following and the
// keeper, and revokes the leases the shell holds, so that every clean end
// of a process revokes them (a killed one leaves that to expiry). It takes
// at most about ExitBudget: then Options.Abort cuts what still waits.
func (sh *Shell) KeepLeases() (stop func()) {
	if sh.cfg == nil {
		return func() {}
	}
	stopKeeper := sh.cfg.Leases().Keep(sh.leaseWarning)
	return func() {
		abort := time.AfterFunc(ExitBudget, sh.abort)
		defer abort.Stop()
		// A follow's fetch holds the config while it waits for the
		// server: stopped first, it lets go at once.
		sh.Close()
		stopKeeper()
		ctx, cancel := context.WithTimeout(context.Background(), min(sh.timeout, ExitBudget))
		defer cancel()
		lost, err := sh.cfg.Leases().RevokeHeld(ctx)
		for _, l := range lost {
			sh.leaseWarning(l.String())
		}
		if err != nil {
			sh.leaseWarning("Could not revoke this shell's leases (they expire by themselves): " + sh.explain(err, min(sh.timeout, ExitBudget)))
		}
	}
}

// underLease is ", lease 'L'" for a value attached to lease L.
func underLease(lease string) string {
	if lease == "" {
		return ""
	}
	return ", lease " + Quote(lease)
}

// removedWithLease says how a key attached to a lease went, if its lease's
// end removed it: ch is a change of the key's History.
func removedWithLease(ch sharedconfig.Change) string {
	for _, e := range ch.Ended {
		if e.Expired {
			return ": lease " + Quote(e.Name) + " expired"
		}
		return ": lease " + Quote(e.Name) + " revoked"
	}
	return ""
}

// leaseWarning prints what the lease keeper has to say: a line, or a JSON
// event.
func (sh *Shell) leaseWarning(msg string) {
	if sh.json {
		var b strings.Builder
		writeJSON(&b, fields{"event": "lease_warning", "message": msg})
		sh.printAsync([]string{strings.TrimSuffix(b.String(), "\n")})
		return
	}
	sh.warnAsync(warn("%s", msg))
}
