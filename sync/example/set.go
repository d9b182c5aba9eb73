package example

import (
	"encoding/json"
	"fmt"
	"iter"

	"github.com/benbjohnson/immutable"

	"github.com/sharedconfig/sharedconfig/internal/strictjson"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Set is a shared set of strings: another state a synchronizer can keep.
// It is persistent, so adding a member costs O(log n) however large the set.
// SetAdd and SetRemove are its updates, SetOf its initial update and
// snapshot, SetCodec their JSON.
type Set struct {
	m *immutable.SortedMap[string, struct{}]
}

// Has reports whether member is in the set.
func (s Set) Has(member string) bool {
	if s.m == nil {
		return false
	}
	_, ok := s.m.Get(member)
	return ok
}

// Len is the number of members.
func (s Set) Len() int {
	if s.m == nil {
		return 0
	}
	return s.m.Len()
}

// Members yields the members in order.
func (s Set) Members() iter.Seq[string] {
	return func(yield func(string) bool) {
		if s.m == nil {
			return
		}
		for it := s.m.Iterator(); !it.Done(); {
			k, _, _ := it.Next()
			if !yield(k) {
				return
			}
		}
	}
}

func (s Set) sorted() *immutable.SortedMap[string, struct{}] {
	if s.m == nil {
		return immutable.NewSortedMap[string, struct{}](immutable.NewComparer(""))
	}
	return s.m
}

// SetAdd adds a member.
type SetAdd struct{ Member string }

// Apply implements Update.
func (a SetAdd) Apply(s Set, _ uint64) Set { return Set{s.sorted().Set(a.Member, struct{}{})} }

// SetRemove removes a member.
type SetRemove struct{ Member string }

// Apply implements Update.
func (r SetRemove) Apply(s Set, _ uint64) Set { return Set{s.sorted().Delete(r.Member)} }

// SetOf is a set with the given members.
type SetOf struct{ Members []string }

// Create implements InitialUpdate.
func (i SetOf) Create(uint64) Set {
	var s Set
	for _, m := range i.Members {
		s = SetAdd{m}.Apply(s, 0)
	}
	return s
}

// SetCodec encodes a Set's entries as JSON: updates as
// [{"add":"m"},{"remove":"m"}] and snapshots as {"members":[...]}.
type SetCodec struct{}

type setOp struct {
	Add    *string `json:"add,omitempty"`
	Remove *string `json:"remove,omitempty"`
}

// EncodeUpdates implements Codec.
func (SetCodec) EncodeUpdates(us []statesync.Update[Set]) ([]byte, error) {
	ops := make([]setOp, len(us))
	for i, u := range us {
		switch u := u.(type) {
		case SetAdd:
			ops[i].Add = &u.Member
		case SetRemove:
			ops[i].Remove = &u.Member
		default:
			return nil, fmt.Errorf("cannot encode set update %T", u)
		}
	}
	return json.Marshal(ops)
}

// DecodeUpdates implements Codec.
func (SetCodec) DecodeUpdates(data []byte) ([]statesync.Update[Set], error) {
	var ops []setOp
	if err := strictjson.Unmarshal(data, &ops); err != nil || len(ops) == 0 {
		return nil, fmt.Errorf("not a set update: %q", data)
	}
	us := make([]statesync.Update[Set], len(ops))
	for i, op := range ops {
		switch {
		case op.Add != nil && op.Remove == nil:
			us[i] = SetAdd{*op.Add}
		case op.Remove != nil && op.Add == nil:
			us[i] = SetRemove{*op.Remove}
		default:
			return nil, fmt.Errorf("set update %d is neither an add nor a remove", i)
		}
	}
	return us, nil
}

// EncodeInitial implements Codec.
func (SetCodec) EncodeInitial(i statesync.InitialUpdate[Set]) ([]byte, error) {
	members := []string{}
	for m := range i.Create(0).Members() {
		members = append(members, m)
	}
	return json.Marshal(map[string][]string{"members": members})
}

// DecodeInitial implements Codec.
func (SetCodec) DecodeInitial(data []byte) (statesync.InitialUpdate[Set], error) {
	var w struct {
		Members *[]string `json:"members"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil || w.Members == nil {
		return nil, fmt.Errorf("not a set snapshot: %q", data)
	}
	return SetOf{*w.Members}, nil
}
