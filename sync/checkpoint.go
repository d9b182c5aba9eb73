package statesync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A checkpoint lets a new synchronizer start from a copy an earlier one
// kept (a cache on disk, say) and read only the entries after it, rather
// than the whole log. It binds the copy to the entry it was read up to
// (Entry.ID), so that the first read after Resume checks, as every catch-up
// does (incarnation.go), that the log still holds that entry; a log created
// again under its name is then loaded afresh, never mixed in. It also keeps
// the log's time on that entry: a copy resumed at the log's end knows the
// log's clock as well as one that read the entry (see LastLogTime).

// checkpointMagic opens every checkpoint, so that other bytes are refused
// before anything is decoded.
const checkpointMagic = "statesync-checkpoint 1\n"

// checkpointHeader is where a checkpoint stands; the codec's snapshot of
// the state follows it.
type checkpointHeader struct {
	Revision    uint64    `json:"revision"`
	ID          string    `json:"id"`
	CompactedAt uint64    `json:"compacted_at"`
	Time        time.Time `json:"time"`
	PurgedAt    uint64    `json:"purged_at,omitempty"`
}

// Checkpoint encodes the local copy, made into a snapshot by snapshot, for
// Resume. ok is false when there is nothing a later Resume could trust: no
// state yet, or the ID of the entry at its revision, or the log's time on
// that entry, is not known (the copy's last entry is this synchronizer's
// own, not read back).
func (s *Synchronizer[S]) Checkpoint(snapshot func(state S) InitialUpdate[S]) (data []byte, ok bool, err error) {
	s.mu.Lock()
	cur := *s.local.Load()
	lt := s.logTime.Load()
	s.mu.Unlock()
	if !cur.initialized || cur.id == "" || lt == nil || lt.revision != cur.Revision || lt.stored.IsZero() {
		return nil, false, nil
	}
	head, err := json.Marshal(checkpointHeader{Revision: cur.Revision, ID: cur.id, CompactedAt: cur.compactedAt, Time: lt.stored, PurgedAt: cur.purgedAt})
	if err != nil {
		return nil, false, err
	}
	body, err := s.codec.EncodeInitial(snapshot(cur.Value))
	if err != nil {
		return nil, false, err
	}
	data = append(append(append([]byte(checkpointMagic), head...), '\n'), body...)
	return data, true, nil
}

// CheckpointBase returns the revision of the snapshot the state in a
// checkpoint stems from. A log whose first entry is past it no longer
// holds what the copy was read from: compaction never does that to a copy
// that read past its snapshot, but a purge by hand that keeps the newest
// entries does, and the copy would then read on as if nothing were gone.
func CheckpointBase(data []byte) (uint64, error) {
	rest, ok := bytes.CutPrefix(data, []byte(checkpointMagic))
	line, _, cut := bytes.Cut(rest, []byte{'\n'})
	var h checkpointHeader
	if !ok || !cut || json.Unmarshal(line, &h) != nil {
		return 0, errBadCheckpoint
	}
	return h.CompactedAt, nil
}

// errBadCheckpoint: Resume was given bytes that are not a checkpoint.
var errBadCheckpoint = errors.New("not a checkpoint")

// Resume makes data, from Checkpoint, the local copy of a synchronizer that
// holds none yet. Nothing is read: the next Fetch reads only the entries
// after it, or finds the log replaced and loads it afresh (ErrReplaced).
// Bytes that are not a checkpoint, or one with no state, change nothing and
// return an error.
func (s *Synchronizer[S]) Resume(data []byte) error {
	rest, ok := bytes.CutPrefix(data, []byte(checkpointMagic))
	if !ok {
		return fmt.Errorf("%w: it does not start as one", errBadCheckpoint)
	}
	line, body, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return fmt.Errorf("%w: it ends in its header", errBadCheckpoint)
	}
	var h checkpointHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return fmt.Errorf("%w: %w", errBadCheckpoint, err)
	}
	if h.Revision == 0 || h.ID == "" || h.CompactedAt > h.Revision || h.Time.IsZero() {
		return fmt.Errorf("%w: its header says no position", errBadCheckpoint)
	}
	init, err := s.codec.DecodeInitial(body)
	if err != nil {
		return fmt.Errorf("%w: %w", errBadCheckpoint, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.local.Load().initialized {
		return errors.New("resuming a synchronizer that holds a state already")
	}
	s.local.Store(&local[S]{revisioned: revisioned[S]{Value: init.Create(h.Revision), Revision: h.Revision}, initialized: true, compactedAt: h.CompactedAt, id: h.ID, purgedAt: h.PurgedAt})
	// The log stored the entry at h.Time, so its clock stands there or later.
	s.logTime.Store(&logTime{stored: h.Time, seen: time.Now(), revision: h.Revision})
	return nil
}
