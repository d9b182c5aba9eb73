package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// ErrTooLarge: an update does not fit in one message. It is a
// statesync.ErrTooLarge, so that a writer can fall back to a snapshot.
var ErrTooLarge error = tooLarge{}

type tooLarge struct{}

func (tooLarge) Error() string        { return "too large for the server's max payload" }
func (tooLarge) Is(target error) bool { return target == statesync.ErrTooLarge }

// ErrOutOfStorage: the server refused an entry because its store, or the
// account's share of it, is full. Writes work again once space is freed.
var ErrOutOfStorage = errors.New("the server is out of storage")

// ErrNoJetStream: the server answers, but without JetStream (or not for
// this account).
var ErrNoJetStream = errors.New("the server does not have JetStream enabled")

// describeStreamError is describeJSError for a request about the log's own
// stream, which another process may have deleted: that is
// statesync.ErrDeleted.
func describeStreamError(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w (%w)", statesync.ErrDeleted, err)
	}
	return describeJSError(err)
}

// ErrNotConnected: the connection to the server is down (the client is
// reconnecting), so the request was not sent.
var ErrNotConnected = errors.New("not connected to the server (reconnecting)")

// notSent reports whether a request failed before anything was sent: the
// connection was down and nothing is buffered for later (ReconnectBufSize
// -1). (A closed connection is no such proof: a request in flight when it
// closes fails with ErrConnectionClosed too.)
func notSent(err error) bool { return errors.Is(err, nats.ErrReconnectBufExceeded) }

// describeJSError names the errors a caller can act on: ErrNotConnected,
// ErrNoJetStream, or a server that did not answer in time.
func describeJSError(err error) error {
	switch {
	case errors.Is(err, nats.ErrReconnectBufExceeded):
		return fmt.Errorf("%w: %w", ErrNotConnected, err)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: %w", ErrNoJetStream, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, jetstream.ErrNoStreamResponse):
		return noAnswerError{err}
	}
	return err
}

// noAnswerError is a server that did not answer in time. It wraps the
// cause (a deadline, a NATS timeout) for errors.Is, but does not print it:
// "context deadline exceeded" tells a user nothing more.
type noAnswerError struct{ cause error }

func (e noAnswerError) Error() string { return "the server did not answer in time" }
func (e noAnswerError) Unwrap() error { return e.cause }

// pingTimeout bounds the ping that tells a silent server from time that
// ran out on a request while the server answered (unanswered).
const pingTimeout = 200 * time.Millisecond

// unanswered is err, the error of a call under ctx, marked with
// statesync.ErrNoAnswer if the call's time ran out because the server said
// nothing: the connection is down, or the server does not answer a ping
// either. A request cut off by the deadline of a write that kept losing to
// other writers says nothing of the server by itself. A caller that
// cancelled wants out at once, and is not kept for a ping.
func (l *Log) unanswered(ctx context.Context, err error) error {
	timedOut := errors.As(err, new(noAnswerError)) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, statesync.ErrUnknownOutcome) && pastDeadline(ctx)
	switch {
	case err == nil, !timedOut, errors.Is(err, statesync.ErrNoAnswer), errors.Is(ctx.Err(), context.Canceled):
		return err
	case l.answers():
		return err
	}
	return silentError{err}
}

// pastDeadline reports whether ctx's deadline has come, even if ctx's own
// timer has not yet ended it: a look bounded by the same deadline can end
// first.
func pastDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || ok && !time.Now().Before(deadline)
}

// answers reports whether the server answers a ping within pingTimeout.
// The ping runs beside: a reconnect under way holds the connection's lock
// while it waits for a server (seconds, for one that hangs), and a
// connection in that state is not answering.
func (l *Log) answers() bool {
	answered := make(chan bool, 1)
	go func() { answered <- l.nc.IsConnected() && l.nc.FlushTimeout(pingTimeout) == nil }()
	timer := time.NewTimer(pingTimeout)
	defer timer.Stop()
	select {
	case ok := <-answered:
		return ok
	case <-timer.C:
		return false
	}
}

// silentError is a call's error when the server said nothing: it is
// statesync.ErrNoAnswer, and reads as err does.
type silentError struct{ error }

func (e silentError) Unwrap() error        { return e.error }
func (e silentError) Is(target error) bool { return target == statesync.ErrNoAnswer }
