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
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// attemptTimeout bounds one publish; after it the outcome is unknown and the
// publish is retried with the same message id.
const attemptTimeout = 2 * time.Second

// AppendAfter implements statesync.Log: the entry's ID is its
// message id, and the append is bound to last.ID with
// Nats-Expected-Last-Msg-Id, which the server checks with the expected
// sequence, in the same step.
func (l *Log) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	if len(data) > l.MaxUpdateSize() {
		// Said with what an update may take: one smaller than the max
		// payload is refused too, for the headers' room.
		return statesync.Position{}, fmt.Errorf("an update of %d bytes is %w (%d bytes, of which an update may take %d)", len(data), ErrTooLarge, l.maxPayload, l.MaxUpdateSize())
	}
	msg := l.newMsg(KindUpdate, data)
	setSpeaker(msg, turns.Speaker(ctx))
	if last.Revision == statesync.AnyRevision {
		// Landed after a purge, it must not read as an update whose state
		// went with the entries purged (statesync.Entry.Unconditional).
		msg.Header.Set(HeaderUnconditional, "1")
	}
	if carried := statesync.CarriedOf(ctx); len(carried) > 0 {
		msg.Header.Set(HeaderCarried, carriedHeader(carried))
	}
	guarded, release := l.guard(ctx)
	defer release()
	at, err := l.publishOnce(guarded, last, msg)
	return at, l.unanswered(ctx, l.orRefused(guarded, err))
}

// MaxUpdateSize is the size, in bytes, of the largest update AppendAfter
// takes: a larger one is refused with ErrTooLarge before anything is sent,
// so a writer that knows its update is larger can write a snapshot at once.
func (l *Log) MaxUpdateSize() int { return l.maxPayload - headerRoom }

// setSpeaker records the speaker of the append, if any, with its entry:
// the evidence that a writer who says it waits writes (see package turns).
func setSpeaker(msg *nats.Msg, speaker string) {
	if speaker != "" {
		msg.Header.Set(HeaderSpeaker, speaker)
	}
}

// setPurged records, on a snapshot or each of its chunks, the purge its
// writer knew of (statesync.PurgedContext), if any.
func setPurged(msg *nats.Msg, purged uint64) {
	if purged != 0 {
		msg.Header.Set(HeaderPurged, strconv.FormatUint(purged, 10))
	}
}

// CompactAfter implements statesync.Log. A snapshot that fits in one
// message is one conditional rollup: atomic. A larger one is written in
// chunks, each bound to the one before, and only then are older entries
// purged.
func (l *Log) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	guarded, release := l.guard(ctx)
	defer release()
	at, err := l.compactAfter(guarded, last, snapshot)
	return at, l.unanswered(ctx, l.orRefused(guarded, err))
}

// compactAfter is CompactAfter.
func (l *Log) compactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	limit := l.maxPayload - headerRoom
	speaker, purged := turns.Speaker(ctx), statesync.PurgedOf(ctx)
	if len(snapshot) <= limit {
		msg := l.newMsg(KindSnapshot, snapshot)
		msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
		setSpeaker(msg, speaker)
		setPurged(msg, purged)
		return l.publishOnce(ctx, last, msg)
	}
	// A purge cannot be bound to an entry: it is bound to the stream's
	// creation time, looked up before the first chunk, which lands only on
	// the incarnation that holds last.
	info, err := l.stream.Info(ctx)
	if err != nil {
		return statesync.Position{}, fmt.Errorf("%s: %w", l.name, describeStreamError(err))
	}
	chunks := splitSnapshot(snapshot, limit)
	n := len(chunks)
	id := nuid.Next()
	at := last
	for i, chunk := range chunks {
		msg := l.newMsg(KindSnapshotChunk, chunk)
		msg.Header.Set(HeaderSnapshot, id)
		msg.Header.Set(HeaderChunk, fmt.Sprintf("%d/%d", i, n))
		setSpeaker(msg, speaker)
		setPurged(msg, purged)
		if at, err = l.publishOnce(ctx, at, msg); err != nil {
			return statesync.Position{}, chunkFailed(last.Revision, i, n, err)
		}
	}
	// The snapshot is whole; drop what it covers. Never purge past the
	// first chunk: a purge beyond the last sequence would move it. The
	// compaction has happened whatever becomes of the purge: readers start
	// at the snapshot, and the next compaction purges again, so a failure
	// here is a warning, not the caller's error.
	if err := l.purgeBefore(ctx, last.Revision+1, info.Created); err != nil && l.options.Warning != nil {
		l.options.Warning(fmt.Sprintf("%s: the snapshot was written at %d and is in use, but dropping the entries before it failed (the next compaction drops them): %v", l.name, at.Revision, describeJSError(err)))
	}
	return at, nil
}

// lastChunk bounds the last chunk of a snapshot: until the next write it
// is the stream's last message, which LastPosition fetches whole (to check
// its id) for every reader that opens or refreshes the config.
const lastChunk = 4096

// splitSnapshot cuts a snapshot larger than limit into chunks of at most
// limit bytes, the last of them at most lastChunk.
func splitSnapshot(snapshot []byte, limit int) [][]byte {
	body, tail := snapshot[:len(snapshot)-min(lastChunk, len(snapshot))], snapshot[len(snapshot)-min(lastChunk, len(snapshot)):]
	var chunks [][]byte
	for len(body) > 0 {
		n := min(limit, len(body))
		chunks, body = append(chunks, body[:n]), body[n:]
	}
	return append(chunks, tail)
}

// chunkFailed says what a failure to write chunk i of n means for the
// compaction. Only the last chunk completes the run, so before it the
// compaction has certainly not happened, whatever became of that chunk: an
// unfinished run holds no state.
func chunkFailed(expected uint64, i, n int, err error) error {
	var c *statesync.ConflictError
	if errors.As(err, &c) {
		// Another writer got in between: a conflict for the whole snapshot.
		return &statesync.ConflictError{Current: c.Current}
	}
	if i == n-1 {
		return err // an unknown outcome stays one: the run may be whole
	}
	format := "the compaction was not done (it stopped at snapshot chunk %d of %d, which holds no state): %w"
	if errors.Is(err, statesync.ErrUnknownOutcome) {
		format = "the compaction was not done (it stopped at snapshot chunk %d of %d, which holds no state): %v"
	}
	return fmt.Errorf(format, i+1, n, err)
}

// purgeBefore drops the entries before seq of the stream created at
// created. A purge to a sequence is idempotent, so it is retried while the
// failure may be passing.
func (l *Log) purgeBefore(ctx context.Context, seq uint64, created time.Time) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := l.checkCreated(attempt, created)
		if err == nil {
			err = l.purge(attempt, jetstream.WithPurgeSequence(seq))
		}
		cancel()
		if err == nil || !retryable(err) || !sleep(ctx, retryWait) {
			return err
		}
	}
}

// publishOnce publishes msg at expected (conditionally unless AnyRevision)
// and makes sure it lands at most once. After a try that may have stored the
// message (a timeout, a lost connection) it retries with the same message
// id: the server then acks a duplicate, says that id is still in process
// (10158: wait, and ask again), or, on R1 streams, which check the expected
// sequence first, refuses it as a conflict. Once some try may have landed,
// no failure is reported as such: settle looks at the entry at expected+1,
// and what it cannot tell is statesync.ErrUnknownOutcome.
func (l *Log) publishOnce(ctx context.Context, last statesync.Position, msg *nats.Msg) (statesync.Position, error) {
	rev, id, err := l.publishOnceAt(ctx, last, msg)
	if err != nil {
		return statesync.Position{}, err
	}
	return statesync.Position{Revision: rev, ID: id}, nil
}

// publishOpts are the options of a publish with message id id, conditional
// on last (its revision, and its ID if known) unless last is AnyRevision.
func publishOpts(id string, last statesync.Position) []jetstream.PublishOpt {
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id)}
	if last.Revision != statesync.AnyRevision {
		opts = append(opts, jetstream.WithExpectLastSequence(last.Revision))
		if last.ID != "" {
			// The subject's last message too: a purge leaves the stream's
			// sequence, and its last message id, where they were, but not
			// the entry, and an update after it would follow no state.
			opts = append(opts, jetstream.WithExpectLastMsgID(last.ID), jetstream.WithExpectLastSequencePerSubject(last.Revision))
		}
	}
	return opts
}

// refused is the error of a try that certainly stored nothing, nor did any
// try before it, or nil: the stream's entry at last is another (ErrReplaced),
// the message is too large, or it was never sent (the connection was down,
// or the server refused this user to publish it, as it refuses every try)
// and no earlier try may have landed.
func (l *Log) refused(err error, last statesync.Position, size int, mayHaveLanded bool) error {
	var denied *PermissionError
	switch {
	case errors.As(err, &denied) && !denied.Subscribe && denied.Subject == l.subject && !mayHaveLanded:
		return fmt.Errorf("%s: %w: nothing was changed", l.name, denied)
	case wrongLastID(err):
		// The stream would be past last had an earlier try landed.
		return fmt.Errorf("%s: its entry %d is not the one read (%s): %w", l.name, last.Revision, last.ID, statesync.ErrReplaced)
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Errorf("an entry of %d bytes is %w (%d bytes)", size, ErrTooLarge, l.maxPayload)
	case notSent(err) && !mayHaveLanded:
		// Nothing is kept to send later (ReconnectBufSize -1).
		return fmt.Errorf("%s: %w: the write was not sent, so nothing was changed", l.name, describeJSError(err))
	}
	return nil
}

// publishOnceAt is publishOnce; it returns the message's revision and id.
func (l *Log) publishOnceAt(ctx context.Context, last statesync.Position, msg *nats.Msg) (uint64, string, error) {
	expected := last.Revision
	id := nuid.Next()
	opts := publishOpts(id, last)
	if err := ctx.Err(); err != nil {
		// The time ran out on the requests before this one.
		return 0, id, fmt.Errorf("%s: %w: the write was not sent, so nothing was changed", l.name, describeJSError(err))
	}
	// The tries stop short of ctx's deadline, so that settle's look fits
	// before it: a --timeout bounds the whole write, look included.
	tries, cancelTries := triesContext(ctx)
	defer cancelTries()
	mayHaveLanded := false
	fail := func(err error) (uint64, string, error) {
		if mayHaveLanded {
			rev, err := l.settle(ctx, expected, id, err)
			return rev, id, err
		}
		return 0, id, fmt.Errorf("%s: %w", l.name, describeJSError(err))
	}
	wait := retryWait
	for {
		attempt, cancel := context.WithTimeout(tries, attemptTime(tries))
		ack, err := l.publish(attempt, msg, opts...)
		err = refusedOr(attempt, err)
		cancel()
		if err == nil {
			return ack.Sequence, id, nil
		}
		if current, ok := conflict(err); ok && mayHaveLanded {
			return fail(&statesync.ConflictError{Current: current})
		} else if ok {
			return 0, id, &statesync.ConflictError{Current: current}
		}
		if refused := l.refused(err, last, len(msg.Data), mayHaveLanded); refused != nil {
			return 0, id, refused
		}
		if err := l.streamGoneAfter(tries, last, err, mayHaveLanded); err != nil {
			return 0, id, err
		}
		mayHaveLanded = mayHaveLanded || mayHaveStored(err) || inProcess(err)
		if full := outOfStorage(err); full != nil {
			return fail(full)
		}
		// An earlier try may have landed: trying again with its id, while
		// the caller waits, is how to learn whether it did.
		if !retryable(err) && !notSent(err) || tries.Err() != nil {
			return fail(err)
		}
		if inProcess(err) {
			// The first try is waiting for its replicas (say, while they
			// restart): give it time, then ask again.
			wait = min(2*wait, inProcessWait)
		}
		if !sleep(tries, wait) {
			return fail(err)
		}
	}
}

const (
	// retryWait is the pause before retrying a try that failed in transit.
	retryWait = 50 * time.Millisecond
	// inProcessWait bounds the pause before asking again about a message
	// the server says is still in process.
	inProcessWait = time.Second
	// settleTimeout bounds the look at the stream that settles an
	// ambiguous publish, which may happen after a ctx without a deadline
	// was cancelled.
	settleTimeout = 2 * time.Second
)

// attemptTime bounds one try of a publish under ctx: attemptTimeout, but
// at most half of what is left, so that after a try nobody answered there
// is time to look why and try again. (A subscriber to the subject, such as
// a follower's own, takes a publish that no stream stores, so a deleted
// stream is silent rather than refused at once.)
func attemptTime(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return min(attemptTimeout, time.Until(deadline)/2)
	}
	return attemptTimeout
}

// triesContext is ctx for the tries of a publish: they stop short of
// ctx's deadline, to leave settle time for its look before it (a share of
// what is left, at most settleTimeout). Without a deadline, they go on as
// long as ctx.
func triesContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-min(settleTimeout, time.Until(deadline)/4)))
}

// sleep waits for d, or until ctx ends, and reports whether ctx is alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// settle decides a publish that some try may have stored, after the last try
// failed with cause. The message can only stand at expected+1: if ours is
// there it landed; if another writer's is, ours never can (a conflict);
// otherwise (not written yet, compacted away, the stream unreachable, or an
// unconditional publish) the outcome is unknown.
func (l *Log) settle(ctx context.Context, expected uint64, id string, cause error) (uint64, error) {
	unknown := func(format string, args ...any) (uint64, error) {
		detail, why := fmt.Sprintf(format, args...), describeJSError(cause).Error()
		if strings.HasSuffix(detail, why) {
			return 0, fmt.Errorf("%s: %w: %s, as for the append", l.name, statesync.ErrUnknownOutcome, detail)
		}
		return 0, fmt.Errorf("%s: %w: %s (the append: %s)", l.name, statesync.ErrUnknownOutcome, detail, why)
	}
	if expected == statesync.AnyRevision {
		return unknown("an unconditional write cannot be looked for")
	}
	// Looking costs one request; do it even if ctx was cancelled, so that
	// a write that landed is reported as landed. It may take what is left
	// of ctx (a loaded server answers slowly; the tries left it some), but
	// never past ctx's deadline, a user's --timeout, and once ctx ends at
	// most settleTimeout more: a cancelled command is not held up.
	var checkCtx context.Context
	var cancel context.CancelFunc
	if deadline, ok := ctx.Deadline(); ok {
		checkCtx, cancel = context.WithDeadline(context.WithoutCancel(ctx), deadline)
	} else {
		checkCtx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(settleTimeout, cancel) })()
	m, err := l.getMsg(checkCtx, expected+1)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return unknown("entry %d is not there: not written yet, or compacted away", expected+1)
	case err != nil:
		if err = l.directGetError(checkCtx, err); errors.Is(err, statesync.ErrDeleted) {
			// Whatever the append did went with the stream.
			return 0, fmt.Errorf("%s: %w", l.name, err)
		}
		return unknown("checking entry %d: %v", expected+1, err)
	case m.Header.Get(jetstream.MsgIDHeader) == id:
		return expected + 1, nil
	}
	var refused *statesync.ConflictError
	if errors.As(cause, &refused) {
		return 0, refused
	}
	return 0, &statesync.ConflictError{}
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

// Server error codes (nats-server's errors.json) the client does not name.
const (
	errCodeDuplicateInProcess       = 10158 // JSStreamDuplicateMessageConflict
	errCodeWrongLastMsgID           = 10070 // JSStreamWrongLastMsgIDErrF
	errCodeInsufficientResources    = 10023 // JSInsufficientResourcesErr
	errCodeStorageExceeded          = 10047 // JSStorageResourcesExceededErr
	errCodeMemoryExceeded           = 10028 // JSMemoryResourcesExceededErr
	errCodeAccountResourcesExceeded = 10002 // JSAccountResourcesExceededErr
	errCodeStoreFailed              = 10077 // JSStreamStoreFailedF: the stream's store refused the message
	errCodeClusterNotAvailable      = 10008 // JSClusterNotAvailErr: no leader (yet) to answer
	errCodeNoPeers                  = 10005 // JSClusterNoPeersErrF: too few peers (yet) for the replicas
)

// noStream reports whether a publish found nothing listening: no stream
// stored it.
func noStream(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// streamGoneAfter is streamGone after a try that failed with err, if no
// stream may have stored it: no stream heard it, or it got no answer. A
// subscriber to the subject (this process's own, Notify) takes a publish
// that no stream stores and answers nothing, so a deleted stream can look
// like a silent one; and what a try did went with the stream.
func (l *Log) streamGoneAfter(ctx context.Context, last statesync.Position, err error, mayHaveLanded bool) error {
	if !mayHaveLanded && noStream(err) || unheard(err) && ctx.Err() == nil {
		return l.streamGone(ctx, last)
	}
	return nil
}

// streamGone looks, after a publish that nothing heard, whether the stream
// was deleted. If it was, a publish at the start of an empty log (the first
// snapshot, as Initialize writes it) creates it again, and any other fails
// with statesync.ErrDeleted; otherwise (or if the stream is back) the
// publish is tried again.
func (l *Log) streamGone(ctx context.Context, last statesync.Position) error {
	attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	_, err := l.stream.Info(attempt)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if last.Revision != 0 || last.ID != "" {
		return fmt.Errorf("%s: %w (%w)", l.name, statesync.ErrDeleted, err)
	}
	scope, name, _ := ParseStreamName(l.name)
	_, err = l.lookUpOrCreate(attempt, scope, name, l.options)
	return err
}

// wrongLastID reports whether the server refused a publish because the
// stream's last message is not the expected one (Nats-Expected-Last-Msg-Id).
func wrongLastID(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeWrongLastMsgID
}

// inProcess reports whether the server refused a try because a message with
// the same id is still being stored: an earlier try reached it.
func inProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess
}

// unheard reports whether a try got no answer in its time.
func unheard(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// mayHaveStored reports whether a try that failed with err may have stored
// its message all the same: the server did not answer it, so the request
// may have reached it and only the answer been lost.
func mayHaveStored(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return false // the server answered this try: not stored
	}
	// No stream listened, so nothing received the request.
	return !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse)
}

// outOfStorage turns the server's definitive "no room" answers into
// ErrOutOfStorage, or returns nil. Retrying them only waits: room comes back
// when someone frees it.
func outOfStorage(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeInsufficientResources, errCodeStorageExceeded, errCodeMemoryExceeded, errCodeAccountResourcesExceeded:
			return fmt.Errorf("%w: %s (%d)", ErrOutOfStorage, apiErr.Description, apiErr.ErrorCode)
		case errCodeStoreFailed:
			return fmt.Errorf("the stream's store refused the entry: %s (%d)", apiErr.Description, apiErr.ErrorCode)
		}
	}
	if strings.Contains(err.Error(), "no space left on device") {
		return fmt.Errorf("%w: %v", ErrOutOfStorage, err)
	}
	return nil
}

// retryable reports whether a publish may have failed in passing, so that a
// retry with the same message id is safe and useful.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// e.g. the stream's leader is changing; but a full store stays full.
		return (apiErr.Code == 503 && outOfStorage(err) == nil) || apiErr.ErrorCode == errCodeDuplicateInProcess
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) ||
		// An answer that is no ack: anyone may send one to the reply
		// subject (a combining writer answers a hand on any request's
		// inbox), ahead of the server's.
		errors.Is(err, jetstream.ErrInvalidJSAck) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected)
}
