// Package jetstream stores a statesync.Log in a NATS JetStream stream.
//
// The log: opening and checking a config's stream (log.go), conditional
// appends and compaction (publish.go), reads by batched direct gets or an
// ordered consumer (read.go), the headers below (wire.go), and JetStream's
// errors said plainly (errors.go). Around it: stream names and parsing them
// back (names.go), and listing and deleting configs' streams (configs.go).
// It only uses a connection; running a server and connecting are in
// internal/localserver.
//
// One stream holds one shared state, named by a scope and a name. Each log
// entry is one message; its revision is the message's stream sequence. A
// conditional append is a publish with Nats-Expected-Last-Sequence, so it
// lands only if the stream is still where the writer last read it.
//
// # Wire format, version 1
//
// Every message sharedconfig writes carries these headers:
//
//	Sharedconfig-Format: 1
//	Sharedconfig-Kind:   update | snapshot | snapshot-chunk
//	Nats-Msg-Id:         a unique id per append (duplicate detection)
//	Sharedconfig-Writer: who wrote it (optional; shown by LOG and follow mode)
//	Sharedconfig-Speaker: the id its writer goes by in the words of turns
//	                      (optional; evidence that a waiter writes)
//
// The body is the codec's bytes (JSON for sharedconfig, see that package).
// A snapshot replaces all state before it and is written with
// "Nats-Rollup: all", which drops every earlier message in the same atomic,
// conditional publish. A snapshot larger than the server's max payload is
// written as a run of snapshot-chunk messages at consecutive sequences, each
// conditional on the one before, with
//
//	Sharedconfig-Snapshot: the id shared by the run
//	Sharedconfig-Chunk:    i/n (0-based index, count)
//
// The run counts only when all n chunks stand in order; the last one commits
// it. Then the messages before the first chunk are purged. An unfinished run
// (its writer lost a race or died) is never read as a snapshot and holds no
// state, so it loses nothing.
//
// A message with neither Sharedconfig- header was published by another
// program: reads deliver it as a foreign entry (statesync.Entry.Foreign),
// which holds no state. One with them but an unknown format or kind makes
// reads fail with a statesync.EntryError naming the stream and the
// sequence, as the codec does for a body that does not decode.
package jetstream
