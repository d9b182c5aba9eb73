package sharedconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// WriteResult is what Put, Remove or Replace found and did.
type WriteResult struct {
	// Written: the write went into the log. It is false when a condition
	// (IfAbsent, IfValue, IfRevision) did not hold, or when Remove or
	// Replace found no value; nothing was written then.
	Written bool
	// Existed: the key had a value when the write was decided, and
	// Previous is that value with the revision that set it and its lease:
	// the value replaced or removed, or the one that failed the condition.
	Existed  bool
	Previous Property
}

// A WriteOption makes Put, Remove or Replace conditional, or attaches the
// key Put or Replace sets to a lease. Conditions are decided on a copy
// checked to be current, as every write's are.
type WriteOption func(*writeOptions)

type writeOptions struct {
	ifAbsent    bool
	ifValue     *string
	ifRevision  uint64
	hasRevision bool
	lease       string
}

// IfAbsent writes only if the key has no value (Put only): Pravega's
// putIfAbsent. When it has one, Previous is that value.
func IfAbsent() WriteOption { return func(o *writeOptions) { o.ifAbsent = true } }

// IfValue writes only if the key's value is value: Pravega's
// removeIfValue and replaceIfValue.
func IfValue(value string) WriteOption {
	return func(o *writeOptions) { o.ifValue = &value }
}

// IfRevision writes only if the key was last set at revision (as
// State.Lookup tells; etcd calls it mod_revision).
func IfRevision(revision uint64) WriteOption {
	return func(o *writeOptions) { o.ifRevision, o.hasRevision = revision, true }
}

// WithLease attaches the key to lease, which this process must hold (see
// lease.go): the key goes when the lease ends. Without it, Put and Replace
// detach the key from any lease.
func WithLease(lease string) WriteOption { return func(o *writeOptions) { o.lease = lease } }

// Put sets key to value and returns the value it replaced, if any; with
// options, only if their conditions hold.
func (c *Config) Put(ctx context.Context, key, value string, opts ...WriteOption) (WriteResult, error) {
	return c.write(ctx, writeCall{name: "Put", key: key, value: &value}, opts)
}

// Replace sets key to value only if key has a value (and the options'
// conditions hold), and returns that value.
func (c *Config) Replace(ctx context.Context, key, value string, opts ...WriteOption) (WriteResult, error) {
	return c.write(ctx, writeCall{name: "Replace", key: key, value: &value, mustExist: true}, opts)
}

// Remove deletes key (if the options' conditions hold) and returns the
// value it had, if any. Every call counts toward Options.Compaction's
// rule of every 5th Remove, whether or not it removed anything.
func (c *Config) Remove(ctx context.Context, key string, opts ...WriteOption) (WriteResult, error) {
	r, err := c.write(ctx, writeCall{name: "Remove", key: key, mustExist: true}, opts)
	if err == nil {
		c.countRemove(ctx)
	}
	return r, err
}

// writeCall is one call of Put, Replace or Remove: value is nil for Remove.
type writeCall struct {
	name      string
	key       string
	value     *string
	mustExist bool
}

// write decides and appends one call. A write with a lease is judged on
// the state its own entry made: if the lease ended before the entry
// (another process expired it), the key never took the value.
func (c *Config) write(ctx context.Context, w writeCall, opts []WriteOption) (WriteResult, error) {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(w); err != nil {
		return WriteResult{}, err
	}
	var leaseHeld func(State) error
	if o.lease != "" {
		leaseHeld = c.leaseHeld(o.lease)
	}
	type decision struct {
		WriteResult
		err error
	}
	var op []byte
	if leaseHeld == nil && o == (writeOptions{}) && w.name == "Put" {
		// Another process may commit it (see statesync.UpdateOp): an
		// unconditional Put always writes, so an entry binds it.
		op = w.op()
	}
	d, after, err := updateAt(ctx, c, func(s State) (updates, decision) {
		if leaseHeld != nil {
			if err := leaseHeld(s); err != nil {
				return nil, decision{err: err}
			}
		}
		u, r := o.decide(w, s)
		return u, decision{WriteResult: r}
	}, op, o.texts(w)...)
	if err == nil {
		err = d.err
	}
	if err != nil {
		return WriteResult{}, err
	}
	if d.Written && o.lease != "" {
		if err := putLanded(after, w.key, *w.value, o.lease); err != nil {
			return WriteResult{}, err
		}
	}
	return d.WriteResult, nil
}

// decide is what the call decides on state s: its update, if its
// conditions hold, and what it found.
func (o writeOptions) decide(w writeCall, s State) (updates, WriteResult) {
	p, ok := s.Lookup(w.key)
	r := WriteResult{Existed: ok, Previous: p}
	if !o.hold(w, p, ok) {
		return nil, r
	}
	r.Written = true
	return updates{o.update(w)}, r
}

// writeOp is an unconditional Put, as another process may commit it
// (statesync.UpdateOp): see docs/wire.md. Only a call that always writes
// is handed: one that may decide to write nothing would leave no entry to
// say it was decided, and so could be decided twice.
type writeOp struct {
	Call  string `json:"call"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

// op is the call as a writeOp's JSON.
func (w writeCall) op() []byte {
	if w.value == nil {
		return nil
	}
	data, err := json.Marshal(writeOp{Call: w.name, Key: w.key, Value: *w.value})
	if err != nil {
		return nil
	}
	return data
}

// DecodeOp implements statesync.OpCodec for the calls writeCall.op
// describes.
func (codec) DecodeOp(data []byte) (func(State) []statesync.Update[State], error) {
	var op writeOp
	if err := strictjson.Unmarshal(data, &op); err != nil {
		return nil, err
	}
	switch {
	case op.Call != "Put":
		return nil, fmt.Errorf("not a call: %q", op.Call)
	case op.Key == "":
		return nil, errEmptyKey
	case !utf8.ValidString(op.Key) || !utf8.ValidString(op.Value):
		return nil, ErrNotUTF8
	}
	w := writeCall{name: op.Call, key: op.Key, value: &op.Value}
	return func(s State) []statesync.Update[State] {
		u, _ := writeOptions{}.decide(w, s)
		return u
	}, nil
}

// check refuses options that can never write, or that do not apply.
func (o writeOptions) check(w writeCall) error {
	switch {
	case o.ifAbsent && w.mustExist:
		return fmt.Errorf("%s with IfAbsent never writes: %s needs a value to act on", w.name, w.name)
	case o.ifAbsent && (o.ifValue != nil || o.hasRevision):
		return errors.New("IfAbsent with IfValue or IfRevision never writes: an absent key has neither")
	case w.value == nil && o.lease != "":
		return fmt.Errorf("%s takes no lease", w.name)
	}
	return nil
}

// hold says whether the call's conditions hold for the key's property p
// (exists: it has one).
func (o writeOptions) hold(w writeCall, p Property, exists bool) bool {
	switch {
	case o.ifAbsent:
		return !exists
	case !exists:
		return !w.mustExist && o.ifValue == nil && !o.hasRevision
	}
	return (o.ifValue == nil || p.Value == *o.ifValue) && (!o.hasRevision || p.Revision == o.ifRevision)
}

// update is the call's update, once its conditions hold.
func (o writeOptions) update(w writeCall) statesync.Update[State] {
	switch {
	case w.value == nil:
		return removeUpdate{w.key}
	case o.lease != "":
		return putUnder(w.key, *w.value, o.lease)
	}
	return putUpdate{w.key, *w.value}
}

// texts are the call's strings that must be UTF-8.
func (o writeOptions) texts(w writeCall) []string {
	texts := []string{w.key, o.lease}
	if w.value != nil {
		texts = append(texts, *w.value)
	}
	if o.ifValue != nil {
		texts = append(texts, *o.ifValue)
	}
	return texts
}
