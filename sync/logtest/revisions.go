package logtest

import (
	"context"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Append, Compact, Read and LastRevision are a log's methods with revisions
// alone (Positions with no ID), for tests that write and read a log by hand.

// Append is l.AppendAfter at revision expected.
func Append(l statesync.Log, ctx context.Context, expected uint64, data []byte) (uint64, error) {
	at, err := l.AppendAfter(ctx, statesync.Position{Revision: expected}, data)
	return at.Revision, err
}

// Compact is l.CompactAfter at revision expected.
func Compact(l statesync.Log, ctx context.Context, expected uint64, snapshot []byte) (uint64, error) {
	at, err := l.CompactAfter(ctx, statesync.Position{Revision: expected}, snapshot)
	return at.Revision, err
}

// Read is l.ReadAfter from revision after.
func Read(l statesync.Log, ctx context.Context, after, upTo uint64, fn func(statesync.Entry) error) error {
	return l.ReadAfter(ctx, statesync.Position{Revision: after}, upTo, fn)
}

// LastRevision is the revision of l.LastPosition.
func LastRevision(l statesync.Log, ctx context.Context) (uint64, error) {
	last, err := l.LastPosition(ctx)
	return last.Revision, err
}
