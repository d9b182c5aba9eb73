package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Header names and values of the wire format (see the package doc).
const (
	HeaderFormat   = "Sharedconfig-Format"
	HeaderKind     = "Sharedconfig-Kind"
	HeaderSnapshot = "Sharedconfig-Snapshot"
	HeaderChunk    = "Sharedconfig-Chunk"
	HeaderWriter   = "Sharedconfig-Writer"

	FormatVersion     = "1"
	KindUpdate        = "update"
	KindSnapshot      = "snapshot"
	KindSnapshotChunk = "snapshot-chunk"
)

const (
	// headerRoom is what a message's headers may take of the max payload.
	headerRoom = 1024
	// attemptTimeout bounds one publish; after it the outcome is unknown
	// and the publish is retried with the same message id.
	attemptTimeout = 2 * time.Second
	// readStall bounds the wait for the next message of a catch-up that
	// knows the message exists.
	readStall = 10 * time.Second
	// consumerIdle is when the server drops a catch-up's consumer that was
	// not deleted.
	consumerIdle = 10 * time.Second
)

// ErrTooLarge: an update does not fit in one message.
var ErrTooLarge = errors.New("too large for the server's max payload")

// Log is a statesync.Log on one JetStream stream.
type Log struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	stream     jetstream.Stream
	name       string // the stream's name
	subject    string
	maxPayload int
	writer     string

	// Batched direct gets share one reply subscription for the log's life:
	// a subscription per request would cost the server a subscribe and an
	// unsubscribe every time a writer loses a race.
	directMu    sync.Mutex
	directSub   *nats.Subscription
	directInbox string
	directReqs  uint64

	// publish is JetStream's PublishMsg; tests replace it to lose acks.
	publish func(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// LogOptions configure the stream OpenLog creates.
type LogOptions struct {
	// Replicas is the stream's replication factor when OpenLog creates it;
	// 0 means 1.
	Replicas int
	// Writer names this process in the entries it writes (the
	// Sharedconfig-Writer header), so that others can say who changed what.
	Writer string
}

// OpenLog opens the log for scope/name on nc, creating its stream if it does
// not exist. An existing stream whose settings would lose or refuse entries
// is an error that says which setting.
func OpenLog(ctx context.Context, nc *nats.Conn, scope, name string, o LogOptions) (*Log, error) {
	if err := ValidateName("scope", scope); err != nil {
		return nil, err
	}
	if err := ValidateName("name", name); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	l := &Log{nc: nc, js: js, name: StreamName(scope, name), subject: Subject(scope, name), maxPayload: int(nc.MaxPayload()), writer: o.Writer}
	l.publish = js.PublishMsg
	replicas := max(o.Replicas, 1)
	l.stream, err = js.Stream(ctx, l.name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		l.stream, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        l.name,
			Description: "sharedconfig " + scope + "/" + name,
			Subjects:    []string{l.subject},
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
			Retention:   jetstream.LimitsPolicy,
			MaxMsgs:     -1,
			MaxBytes:    -1,
			MaxAge:      0,
			// Compaction is the only way entries leave the stream.
			DenyDelete:  true,
			AllowRollup: true,
			Duplicates:  2 * time.Minute,
			// Catch-up reads with batched direct gets: one request for
			// many entries, no consumer to create and delete.
			AllowDirect: true,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another process created it first.
			l.stream, err = js.Stream(ctx, l.name)
		}
		if err != nil {
			return nil, fmt.Errorf("creating stream %s: %w", l.name, describeJSError(err))
		}
	case err != nil:
		return nil, fmt.Errorf("opening stream %s: %w", l.name, describeJSError(err))
	}
	if err := checkStreamConfig(l.stream.CachedInfo().Config, l.subject); err != nil {
		return nil, fmt.Errorf("stream %s exists with settings sharedconfig cannot use: %w", l.name, err)
	}
	return l, nil
}

func checkStreamConfig(c jetstream.StreamConfig, subject string) error {
	var problems []string
	if len(c.Subjects) != 1 || c.Subjects[0] != subject {
		problems = append(problems, fmt.Sprintf("subjects %v (want [%s])", c.Subjects, subject))
	}
	if !c.AllowRollup || c.DenyPurge {
		problems = append(problems, "rollups not allowed (compaction needs allow_rollup_hdrs and purges)")
	}
	if c.Retention != jetstream.LimitsPolicy {
		problems = append(problems, "retention "+c.Retention.String()+" (want limits)")
	}
	if c.MaxMsgs > 0 || c.MaxBytes > 0 || c.MaxAge > 0 || c.MaxMsgsPerSubject > 0 {
		problems = append(problems, "limits that would drop entries (max msgs, bytes, age or msgs per subject)")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Name implements statesync.Log: the stream's name.
func (l *Log) Name() string { return l.name }

// Replicas is how many servers hold the stream.
func (l *Log) Replicas() int { return max(l.stream.CachedInfo().Config.Replicas, 1) }

// Conn is the connection the log uses.
func (l *Log) Conn() *nats.Conn { return l.nc }

// Stream is the JetStream stream the log is on.
func (l *Log) Stream() jetstream.Stream { return l.stream }

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

func (l *Log) newMsg(kind string, data []byte) *nats.Msg {
	msg := nats.NewMsg(l.subject)
	msg.Data = data
	msg.Header.Set(HeaderFormat, FormatVersion)
	msg.Header.Set(HeaderKind, kind)
	if l.writer != "" {
		msg.Header.Set(HeaderWriter, l.writer)
	}
	return msg
}

// Notify implements statesync.Notifier with a plain subscription to the
// config's subject: every message stored in the stream is published there.
func (l *Log) Notify(fn func()) (stop func(), err error) {
	sub, err := l.nc.Subscribe(l.subject, func(*nats.Msg) { fn() })
	if err != nil {
		return nil, fmt.Errorf("%s: watching for changes: %w", l.name, err)
	}
	return func() { sub.Unsubscribe() }, nil
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
			// An attempt that ctx cut short may have gone out: nats.go
			// also keeps publishes made while it reconnects, and sends
			// them once it is back.
			cutShort := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
			if ctx.Err() != nil && (ambiguous || cutShort) {
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

// describeJSError turns the errors a user can act on into sentences.
func describeJSError(err error) error {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("the server does not have JetStream enabled (start nats-server with -js): %w", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, jetstream.ErrNoStreamResponse):
		return fmt.Errorf("the server did not answer in time: %w", err)
	}
	return err
}

// LastRevision implements statesync.Log. The stream's leader answers, so it
// is current even on replicated streams.
func (l *Log) LastRevision(ctx context.Context) (uint64, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", l.name, describeJSError(err))
	}
	return info.State.LastSeq, nil
}

// Read implements statesync.Log. A short read (up to directBatch entries:
// catching up after a conflict, a REFRESH) is one batched direct get when
// the stream allows them (streams sharedconfig creates do); a long one, or
// one on a stream without direct gets, streams through an ordered consumer,
// which is faster in bulk. Either way it reads up to upTo, and further only
// to finish a snapshot that covers a gap.
func (l *Log) Read(ctx context.Context, after, upTo uint64, fn func(statesync.Entry) error) error {
	if upTo <= after {
		return nil
	}
	r := &reader{log: l, next: after + 1}
	if upTo-after <= directBatch && l.stream.CachedInfo().Config.AllowDirect {
		done, err := l.readDirect(ctx, r, upTo, fn)
		if done || err != nil {
			return err
		}
		// A replica answered without moving forward (it may lag): the
		// consumer waits for the entries instead.
	}
	return l.readConsumer(ctx, r, upTo, fn)
}

// deliver hands one stream message to the reader and fn, and reports
// whether the read is complete.
func (l *Log) deliver(r *reader, seq uint64, h nats.Header, data []byte, at time.Time, upTo uint64, fn func(statesync.Entry) error) (bool, error) {
	entry, ok, err := r.add(seq, h, data)
	if err != nil {
		return false, err
	}
	if ok {
		entry.Writer = h.Get(HeaderWriter)
		entry.Time = at
		if err := fn(entry); err != nil {
			return false, err
		}
	}
	return seq >= upTo && !r.gap, nil
}

// directBatch is how many entries one direct get asks for.
const directBatch = 1000

// readDirect reads with batched direct gets. It returns done=false, with no
// error, when a batch brought nothing new.
func (l *Log) readDirect(ctx context.Context, r *reader, upTo uint64, fn func(statesync.Entry) error) (bool, error) {
	for {
		from := r.next
		want := int(min(upTo-from+1, directBatch))
		if r.gap {
			want = directBatch // finishing a snapshot past upTo
		}
		done := false
		err := l.getBatch(ctx, from, want, func(m *nats.Msg) error {
			seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: a direct get answered without a sequence", l.name)
			}
			at, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
			done, err = l.deliver(r, seq, m.Header, m.Data, at, upTo, fn)
			if done && err == nil {
				return errBatchDone
			}
			return err
		})
		if errors.Is(err, errBatchDone) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if r.next == from {
			return false, nil
		}
	}
}

var errBatchDone = errors.New("read complete")

// getBatch asks for up to n messages from sequence from with one direct get
// and hands each to fn, until the server's end-of-batch mark.
func (l *Log) getBatch(ctx context.Context, from uint64, n int, fn func(*nats.Msg) error) error {
	l.directMu.Lock()
	defer l.directMu.Unlock()
	if l.directSub == nil {
		l.directInbox = l.nc.NewRespInbox()
		sub, err := l.nc.SubscribeSync(l.directInbox + ".*")
		if err != nil {
			return fmt.Errorf("%s: reading after %d: %w", l.name, from-1, err)
		}
		l.directSub = sub
	}
	l.directReqs++
	reply := l.directInbox + "." + strconv.FormatUint(l.directReqs, 10)
	req := fmt.Appendf(nil, `{"seq":%d,"batch":%d}`, from, n)
	if err := l.nc.PublishRequest("$JS.API.DIRECT.GET."+l.name, reply, req); err != nil {
		return fmt.Errorf("%s: reading after %d: %w", l.name, from-1, err)
	}
	reqCtx, cancel := context.WithTimeout(ctx, readStall)
	defer cancel()
	for {
		m, err := l.directSub.NextMsgWithContext(reqCtx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: reading after %d: %w", l.name, from-1, describeJSError(err))
		}
		if m.Subject != reply {
			continue // left over from a read that stopped early
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			switch m.Header.Get("Status") {
			case "204", "404": // end of the batch; nothing at or after from
				return nil
			default:
				return fmt.Errorf("%s: reading after %d: %s %s", l.name, from-1, m.Header.Get("Status"), m.Header.Get("Description"))
			}
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

// readConsumer reads with an ordered consumer from r.next.
func (l *Log) readConsumer(ctx context.Context, r *reader, upTo uint64, fn func(statesync.Entry) error) error {
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   r.next,
		// The server keeps at most 1,000 consumers per stream by default,
		// and Stop leaves this one behind: delete it when done (below), and
		// let the server drop it soon if that delete is lost.
		InactiveThreshold: consumerIdle,
	})
	if err != nil {
		return fmt.Errorf("%s: reading after %d: %w", l.name, r.next-1, describeJSError(err))
	}
	msgs, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("%s: reading after %d: %w", l.name, r.next-1, describeJSError(err))
	}
	defer func() {
		msgs.Stop()
		name := cons.CachedInfo().Name
		// Off the caller's path, as nats.go does when it replaces an
		// ordered consumer.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			l.stream.DeleteConsumer(ctx, name)
		}()
	}()
	// One timer for the whole read, pushed back at every message, notices a
	// stalled read (a context per message would cost a timer each).
	readCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stall := time.AfterFunc(readStall, cancel)
	defer stall.Stop()
	for {
		msg, err := msgs.Next(jetstream.NextContext(readCtx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: reading entry %d of %d: %w", l.name, r.next, upTo, describeJSError(err))
		}
		stall.Reset(readStall)
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("%s: reading after %d: %w", l.name, r.next-1, err)
		}
		done, err := l.deliver(r, meta.Sequence.Stream, msg.Headers(), msg.Data(), meta.Timestamp, upTo, fn)
		if done || err != nil {
			return err
		}
	}
}

// reader turns stream messages into log entries: it notices gaps and
// reassembles chunked snapshots.
type reader struct {
	log  *Log
	next uint64 // the sequence expected next
	gap  bool   // entries were skipped and no snapshot has covered them yet

	chunkID    string
	chunkCount int
	chunks     [][]byte
}

func (r *reader) add(seq uint64, h nats.Header, data []byte) (statesync.Entry, bool, error) {
	bad := func(format string, args ...any) (statesync.Entry, bool, error) {
		return statesync.Entry{}, false, &statesync.EntryError{Log: r.log.name, Revision: seq, Err: fmt.Errorf(format, args...)}
	}
	if seq != r.next {
		r.gap = true
		r.chunks = nil
	}
	r.next = seq + 1
	if h.Get(HeaderKind) == "" {
		return bad("not a sharedconfig entry (it has no %s header)", HeaderKind)
	}
	if v := h.Get(HeaderFormat); v != FormatVersion {
		return bad("wire format %q is not one this program reads (it reads %s)", v, FormatVersion)
	}
	kind := h.Get(HeaderKind)
	if kind != KindSnapshotChunk {
		r.chunks = nil
	}
	switch kind {
	case KindUpdate:
		if r.gap {
			return bad("entries before it were dropped and no snapshot covers them: %w", statesync.ErrGap)
		}
		return statesync.Entry{Revision: seq, Data: data}, true, nil
	case KindSnapshot:
		r.gap = false
		return statesync.Entry{Revision: seq, Snapshot: true, Data: data}, true, nil
	case KindSnapshotChunk:
		var i, n int
		if _, err := fmt.Sscanf(h.Get(HeaderChunk), "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
			return bad("snapshot chunk header %q is not i/n", h.Get(HeaderChunk))
		}
		id := h.Get(HeaderSnapshot)
		if i == 0 {
			r.chunkID, r.chunkCount, r.chunks = id, n, nil
		}
		if id != r.chunkID || n != r.chunkCount || i != len(r.chunks) {
			// Part of a run that was never finished, or whose start this
			// reader is past: it holds no state.
			r.chunks = nil
			if r.gap {
				return bad("entries before it were dropped and no whole snapshot covers them: %w", statesync.ErrGap)
			}
			return statesync.Entry{}, false, nil
		}
		r.chunks = append(r.chunks, data)
		if len(r.chunks) < n {
			return statesync.Entry{}, false, nil
		}
		whole := bytes.Join(r.chunks, nil)
		r.chunks, r.gap = nil, false
		return statesync.Entry{Revision: seq, Snapshot: true, Data: whole}, true, nil
	default:
		return bad("unknown entry kind %q", kind)
	}
}
