package statesync

// revisioned is a state as of a revision of the log: the state after applying
// every entry up to and including Revision (see Synchronizer.State).
type revisioned[S any] struct {
	Value    S
	Revision uint64
}

// Update turns one state into the next, as of the revision of the entry
// that carries it (Pravega's applyTo(oldState, newRevision)). Apply must not
// modify s: it returns a new state (a persistent data structure makes that
// cheap), so that readers holding s keep a consistent snapshot.
type Update[S any] interface {
	Apply(s S, revision uint64) S
}

// InitialUpdate creates a state from nothing, as of a revision. Initialize
// writes one as the first entry of a log, and every compaction writes one (a
// snapshot) that replaces everything before it.
type InitialUpdate[S any] interface {
	Create(revision uint64) S
}

// Applied describes an entry the local copy has taken in, for watchers.
type Applied[S any] struct {
	Entry
	// Updates are the entry's updates; nil for a snapshot.
	Updates []Update[S]
	// Local: this synchronizer wrote the entry.
	Local bool
	// Before and After are the state before and after the entry, when
	// HasStates: the entry was applied on its own (always so for a snapshot,
	// whose After is the state it sets up, and for an entry holding a
	// TimedUpdate; a catch-up may fold runs of other updates together, and
	// then leaves them unset).
	Before, After S
	HasStates     bool
	// flipped are the calls in the entry that Local does not describe
	// (combining): on an entry this synchronizer wrote, the calls of other
	// writers it carried; on another writer's, the calls of this
	// synchronizer's that entry carried (see LocalUpdate).
	flipped []Carried
}

// LocalUpdate: Updates[i] is this synchronizer's own. Under combining an
// entry may carry the calls of several writers: an update is this
// synchronizer's when it wrote the entry and the update is not part of a
// call it carried for another writer, or when another writer's entry
// carried it as a call this synchronizer handed that writer.
func (a Applied[S]) LocalUpdate(i int) bool {
	for _, c := range a.flipped {
		if c.Start <= i && i < c.End {
			return !a.Local
		}
	}
	return a.Local
}

// Codec turns updates into the bytes stored in the log and back. A log entry
// holds either a batch of updates or one initial update (a snapshot).
//
// Decode errors must be returned, never panicked: log entries may come from
// foreign writers.
type Codec[S any] interface {
	EncodeUpdates(updates []Update[S]) ([]byte, error)
	DecodeUpdates(data []byte) ([]Update[S], error)
	EncodeInitial(initial InitialUpdate[S]) ([]byte, error)
	DecodeInitial(data []byte) (InitialUpdate[S], error)
}
