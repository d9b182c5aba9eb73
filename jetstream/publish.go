package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// attemptTimeout bounds one publish; after it the outcome is unknown and the
// publish is retried with the same message id.
const attemptTimeout = 2 * time.Second

// Append implements statesync.Log.
func (l *Log) Append(ctx context.Context, expected uint64, data []byte) (uint64, error) {
	if len(data)+headerRoom > l.maxPayload {
		return 0, fmt.Errorf("an update of %d bytes is %w (%d bytes)", len(data), ErrTooLarge, l.maxPayload)
	}
	return l.publishOnce(ctx, expected, l.newMsg(KindUpdate, data))
}

// Compact implements statesync.Log. A snapshot that fits in one message is
// one conditional rollup: atomic. A larger one is written in chunks, each
// conditional on the last, and only then are older entries purged.
func (l *Log) Compact(ctx context.Context, expected uint64, snapshot []byte) (uint64, error) {
	limit := l.maxPayload - headerRoom
	if len(snapshot) <= limit {
		msg := l.newMsg(KindSnapshot, snapshot)
		msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
		return l.publishOnce(ctx, expected, msg)
	}
	n := (len(snapshot) + limit - 1) / limit
	id := nuid.Next()
	var rev uint64
	for i := range n {
		chunk := snapshot[i*limit : min((i+1)*limit, len(snapshot))]
		msg := l.newMsg(KindSnapshotChunk, chunk)
		msg.Header.Set(HeaderSnapshot, id)
		msg.Header.Set(HeaderChunk, fmt.Sprintf("%d/%d", i, n))
		var err error
		if rev, err = l.publishOnce(ctx, expected+uint64(i), msg); err != nil {
			return 0, err
		}
	}
	// The snapshot is whole; drop what it covers. Never purge past the
	// first chunk: a purge beyond the last sequence would move it.
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSequence(expected+1)); err != nil {
		return 0, fmt.Errorf("snapshot written at %d, but dropping the entries before it failed: %w", rev, err)
	}
	return rev, nil
}

// publishOnce publishes msg at expected (conditionally unless AnyRevision)
// and makes sure it lands at most once. After an ambiguous failure (timeout,
// lost connection) it retries with the same message id: the server then
// either acks a duplicate, or, on R1 streams, which check the expected
// sequence first, refuses it as a conflict, in which case the entry at
// expected+1 tells whether the first try landed.
func (l *Log) publishOnce(ctx context.Context, expected uint64, msg *nats.Msg) (uint64, error) {
	id := nuid.Next()
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id)}
	if expected != statesync.AnyRevision {
		opts = append(opts, jetstream.WithExpectLastSequence(expected))
	}
	ambiguous := false
	for {
		attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
		ack, err := l.publish(attempt, msg, opts...)
		cancel()
		if err == nil {
			return ack.Sequence, nil
		}
		if current, ok := conflict(err); ok {
			if ambiguous && expected != statesync.AnyRevision {
				landed, lerr := l.landed(ctx, expected+1, id)
				if lerr != nil {
					return 0, lerr
				}
				if landed {
					return expected + 1, nil
				}
			}
			return 0, &statesync.ConflictError{Expected: expected, Current: current}
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			return 0, fmt.Errorf("an entry of %d bytes is %w (%d bytes)", len(msg.Data), ErrTooLarge, l.maxPayload)
		}
		if !retryable(err) || ctx.Err() != nil {
			if ctx.Err() != nil && ambiguous {
				return 0, fmt.Errorf("%s: %w: %v", l.name, statesync.ErrUnknownOutcome, ctx.Err())
			}
			return 0, fmt.Errorf("%s: %w", l.name, describeJSError(err))
		}
		ambiguous = true
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// landed reports whether the message at seq is the one with id.
func (l *Log) landed(ctx context.Context, seq uint64, id string) (bool, error) {
	m, err := l.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("%s: %w: entry %d was compacted away before it could be checked", l.name, statesync.ErrUnknownOutcome, seq)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w: checking entry %d: %v", l.name, statesync.ErrUnknownOutcome, seq, err)
	}
	return m.Header.Get(jetstream.MsgIDHeader) == id, nil
}

// conflict reports whether err is a refused expected-last-sequence, and the
// stream's last sequence if the server said.
func conflict(err error) (uint64, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0, false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
		_, n, _ := strings.Cut(apiErr.Description, ":")
		current, _ := strconv.ParseUint(strings.TrimSpace(n), 10, 64)
		return current, true
	}
	return 0, false
}

// retryable reports whether a publish may have failed in transit, so that a
// retry with the same message id is safe and useful.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503 // e.g. the stream's leader is changing
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected)
}
