// Package localserver runs the embedded NATS server with JetStream and
// connects clients to NATS servers.
//
// The embedded server and cluster node (server.go), its data directory and
// lock (datadir.go, lock_*.go), the keys of a private server that admits
// only its owner (localauth.go), and connecting to any server, the private
// one by those keys (connect.go). It is apart from package jetstream so that
// the log adapter does not depend on nats-server.
package localserver
