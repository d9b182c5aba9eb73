// Package statesync keeps one state consistent across processes that share an
// append-only log, in the way Pravega's StateSynchronizer does.
//
// The folder is sync/, but the package is named statesync so that files which
// also need the standard library's sync package can import both without an
// alias. Import it as
//
//	import "github.com/sharedconfig/sharedconfig/sync"
//
// and refer to it as statesync.
//
// The split follows hashicorp/raft: fsm.go holds what a user of the package
// supplies (the state's updates and their encoding), log.go the one log
// interface a backend implements (a conditional append, a compaction, a
// read, where the log ends, and a notice of appends; each bound to an
// entry's ID so that a log deleted and created again is never taken for
// the old one), and synchronizer.go the generic engine that joins the two. Nothing here knows about NATS; package memlog (sync/memlog) is
// an in-memory log for tests, and package jetstream provides the real one.
// Package turns (sync/turns) is the contention manager: writers that keep
// losing to each other take turns. Package example
// (sync/example) holds two small states, a counter and a set, that the
// examples and tests use.
//
// Every change is a conditional append at the revision the writer last saw
// (optimistic concurrency). UpdateState runs the caller's function on the local
// state; if the log moved on, it catches up and runs the function again, as
// etcd's STM does, until the append lands or the context ends (a write that
// kept losing to others ends in a turns.ContendedError). A foreign entry in the
// log (Entry.Foreign) holds no state and is stepped over; an entry that does
// not decode stops reads there with an EntryError. WithApplied's hook hears
// every entry the local copy takes in; WithTrace's, every try of a write.
package statesync
