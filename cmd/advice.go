package cmd

import (
	"errors"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// advice is what a user can do about err, as a clause to add to the line
// that reports it, or "". The libraries say what happened; what to do
// about it depends on who is reading, so it is said here.
func advice(err error) string {
	switch {
	case errors.Is(err, jetstream.ErrNoJetStream):
		return " (start nats-server with -js)"
	case errors.Is(err, jetstream.ErrOutOfStorage):
		return "; free space on the server (delete unused streams, or raise its store limit; a compaction needs room for its snapshot), then write again"
	}
	return ""
}
