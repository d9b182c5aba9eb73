// Package jetstream stores a statesync.Log in a NATS JetStream stream.
//
// The log: opening and checking a config's stream (log.go), conditional
// appends and compaction (publish.go), reads by batched direct gets or an
// ordered consumer (read.go), where the log ends (last.go), the headers
// (wire.go), and JetStream's errors said plainly (errors.go). Around it:
// stream names and parsing them back (names.go), and listing and deleting
// configs' streams (configs.go).
// It only uses a connection; running a server and connecting are in
// internal/localserver.
//
// One stream holds one shared state, named by a scope and a name. Each log
// entry is one message; its revision is the message's stream sequence. A
// conditional append is a publish with Nats-Expected-Last-Sequence and
// Nats-Expected-Last-Msg-Id, so it lands only if the stream is still where,
// and what, the writer last read.
//
// # Wire format
//
// The headers, the bodies, snapshots in chunks and the words of turns are
// described once, in docs/wire.md; the header names are the constants in
// wire.go. A message without sharedconfig's headers was published by
// another program: reads deliver it as a foreign entry
// (statesync.Entry.Foreign), which holds no state. One with them but an
// unknown format or kind makes reads fail with a statesync.EntryError
// naming the stream and the sequence.
package jetstream
