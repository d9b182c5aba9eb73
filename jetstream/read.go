package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

const (
	// readStall bounds the wait for the next message of a catch-up that
	// knows the message exists.
	readStall = 10 * time.Second
	// consumerIdle is when the server drops a catch-up's consumer that was
	// not deleted.
	consumerIdle = 10 * time.Second
)

// ReadAfter implements statesync.Log. A short read (up to directBatch
// entries: catching up after a conflict, a REFRESH) is one batched direct
// get when the stream allows them (streams sharedconfig creates do); a long
// one, or one on a stream without direct gets, streams through an ordered
// consumer, which is faster in bulk. Either way it reads up to upTo, and
// further only to finish a snapshot that covers a gap. When after has an
// ID the read starts one message early, at after itself, whose message id
// must be after.ID: that costs no request of its own, except when there is
// nothing after it to read.
func (l *Log) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	guarded, release := l.guard(ctx)
	defer release()
	err := l.orRefused(guarded, l.readAfter(guarded, after, upTo, fn))
	if err != nil && err == guarded.Err() {
		// Said where the read stood, and in words: not Go's bare "context
		// deadline exceeded".
		err = fmt.Errorf("%s: reading after %d: %w", l.name, after.Revision, describeJSError(err))
	}
	return l.unanswered(ctx, err)
}

// readAfter is ReadAfter.
func (l *Log) readAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	if upTo < after.Revision {
		return fmt.Errorf("%s: reading entries after %d up to %d: the end is before the start", l.name, after.Revision, upTo)
	}
	if after.ID == "" || after.Revision == 0 {
		if upTo == after.Revision {
			return nil
		}
		return l.read(ctx, &reader{log: l, ctx: ctx, next: after.Revision + 1}, upTo, fn)
	}
	return l.read(ctx, &reader{log: l, ctx: ctx, next: after.Revision, check: &after}, upTo, fn)
}

// read reads from r.next up to upTo.
func (l *Log) read(ctx context.Context, r *reader, upTo uint64, fn func(statesync.Entry) error) error {
	if l.closed.Load() {
		return fmt.Errorf("%s: %w", l.name, ErrLogClosed)
	}
	after := r.next - 1
	if upTo-after <= directBatch && l.direct() {
		for try := range directTries {
			if try > 0 {
				// A replica answered without moving forward: it lags behind
				// the leader that reported upTo, by a few milliseconds as a
				// rule. Ask again (any replica may answer) before paying for
				// a consumer, which on a busy cluster can take seconds.
				select {
				case <-time.After(time.Millisecond << (try - 1)):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			done, err := l.readDirect(ctx, r, upTo, fn)
			if errors.Is(err, errDirectRefused) {
				break // the consumer reads on from r.next
			}
			if done || err != nil {
				return err
			}
		}
		// Still behind after about a tenth of a second: the consumer waits
		// for the entries instead.
	}
	return l.readConsumer(ctx, r, upTo, fn)
}

// errDirectRefused: the server refused this connection a direct get on
// the stream. Reads then use a consumer (the refusal is kept: the next
// ones do not ask).
var errDirectRefused = errors.New("direct gets refused")

// directTries is how many times a short read asks replicas before it falls
// back to a consumer; the waits between double from 1 ms (127 ms in all).
const directTries = 8

// deliver hands one stream message to the reader and fn, and reports
// whether the read is complete.
func (l *Log) deliver(r *reader, seq uint64, h nats.Header, data []byte, at time.Time, upTo uint64, fn func(statesync.Entry) error) (bool, error) {
	if r.check != nil {
		if done, checked, err := r.checkFirst(seq, h, upTo); checked || err != nil {
			return done, err
		}
	}
	entry, ok, err := r.add(seq, h, data)
	if err != nil {
		return false, err
	}
	if ok {
		entry.ID = h.Get(jetstream.MsgIDHeader)
		entry.Writer = h.Get(HeaderWriter)
		entry.Speaker = h.Get(HeaderSpeaker)
		entry.Carried = parseCarried(h.Get(HeaderCarried))
		if entry.Snapshot {
			entry.Purged, _ = strconv.ParseUint(h.Get(HeaderPurged), 10, 64)
		}
		entry.Time = at
		if err := fn(entry); err != nil {
			return false, err
		}
	}
	return seq >= upTo && !r.gap, nil
}

// readDirect reads with batched direct gets. It returns done=false, with no
// error, when a batch brought nothing new.
func (l *Log) readDirect(ctx context.Context, r *reader, upTo uint64, fn func(statesync.Entry) error) (bool, error) {
	for {
		from := r.next
		want := int(min(upTo-from+1, directBatch))
		if r.gap {
			want = directBatch // finishing a snapshot past upTo
		}
		batch, err := l.getBatch(ctx, from, want)
		if err != nil {
			return false, err
		}
		// Delivered with no lock held: fn may read this log again, and a
		// slow fn must not hold up other reads.
		for _, m := range batch {
			seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
			if err != nil {
				return false, fmt.Errorf("%s: a direct get answered without a sequence", l.name)
			}
			at, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
			done, err := l.deliver(r, seq, m.Header, m.Data, at, upTo, fn)
			if done || err != nil {
				return done, err
			}
		}
		if r.next == from {
			return false, nil
		}
	}
}

const (
	// directBatch is how many entries one direct get asks for.
	directBatch = 1000
	// directMaxBytes bounds the bytes one direct get brings back, and so
	// what a read holds in memory at once; the read asks again for the rest.
	directMaxBytes = 8 << 20
)

// getBatch asks for up to n messages from sequence from with one direct get
// and returns them, up to the server's end-of-batch mark.
//
// The batched direct get is spoken by hand ($JS.API.DIRECT.GET with
// {"seq","batch"}): nats.go v1.55 has no API for it, only for single gets.
// orbit.go's jetstreamext has one (GetBatch; jetstream-facts §1.8), but one
// request does not justify another dependency, and speaking it here lets
// every batch share the log's reply subscription.
func (l *Log) getBatch(ctx context.Context, from uint64, n int) ([]*nats.Msg, error) {
	select {
	case l.directSlot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.directSlot }()
	if l.closed.Load() {
		return nil, fmt.Errorf("%s: %w", l.name, ErrLogClosed)
	}
	if l.directSub == nil {
		l.directInbox = l.nc.NewRespInbox()
		sub, err := l.nc.SubscribeSync(l.directInbox + ".*")
		if err != nil {
			return nil, fmt.Errorf("%s: reading after %d: %w", l.name, from-1, err)
		}
		l.directSub = sub
	}
	// A token nobody can guess: whoever sees the inbox (any subscriber to
	// _INBOX.>) could otherwise send messages ahead to the next replies.
	reply := l.directInbox + "." + nuid.Next()
	req := fmt.Appendf(nil, `{"seq":%d,"batch":%d,"max_bytes":%d}`, from, n, directMaxBytes)
	direct, release := l.guardDirect(ctx)
	defer release()
	if err := l.nc.PublishRequest(directGetPrefix+l.name, reply, req); err != nil {
		return nil, fmt.Errorf("%s: reading after %d: %w", l.name, from-1, err)
	}
	reqCtx, cancel := context.WithTimeout(direct, readStall)
	defer cancel()
	var batch []*nats.Msg
	for {
		m, err := l.directSub.NextMsgWithContext(reqCtx)
		if err != nil {
			if refusal(direct) != nil {
				return nil, errDirectRefused
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s: reading after %d: %w", l.name, from-1, l.directGetError(ctx, err))
		}
		if m.Subject != reply {
			continue // left over from a read that stopped early
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			switch m.Header.Get("Status") {
			case "204", "404": // end of the batch; nothing at or after from
				return batch, nil
			default:
				return nil, fmt.Errorf("%s: reading after %d: %s %s", l.name, from-1, m.Header.Get("Status"), m.Header.Get("Description"))
			}
		}
		batch = append(batch, m)
	}
}

// directGetError is describeStreamError for a get that failed. Nobody
// answering a direct get on a server that has JetStream means the stream
// was deleted under the read: that is statesync.ErrDeleted too.
func (l *Log) directGetError(ctx context.Context, err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return describeStreamError(err)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		if _, infoErr := l.stream.Info(attempt); errors.Is(infoErr, jetstream.ErrStreamNotFound) {
			return describeStreamError(infoErr)
		}
	}
	return describeJSError(err)
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
	defer l.stopConsumer(cons, msgs)
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
		// Nothing to deliver yet: a replica behind, or entries purged,
		// which would leave the read waiting for good.
		if err := l.emptied(ctx, r, upTo); err != nil {
			return err
		}
	}
	// One timer for the whole read, pushed back at every message, notices a
	// stalled read (a context per message would cost a timer each). It
	// times the server, not fn: a slow fn (a big apply) is no stall.
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
		stall.Stop()
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("%s: reading after %d: %w", l.name, r.next-1, err)
		}
		done, err := l.deliver(r, meta.Sequence.Stream, msg.Headers(), msg.Data(), meta.Timestamp, upTo, fn)
		if done || err != nil {
			return err
		}
		if meta.NumPending == 0 && r.gap && r.chunks == nil {
			// The last message, stepped over (it held no state), and no
			// snapshot under way: none will come to end the gap unless
			// someone writes one.
			if err := l.emptied(ctx, r, upTo); err != nil {
				return err
			}
		}
		stall.Reset(readStall)
	}
}

// stopConsumer stops a read's consumer and deletes it: off the caller's
// path, as nats.go does when it replaces an ordered consumer; Close waits
// for it.
func (l *Log) stopConsumer(cons jetstream.Consumer, msgs jetstream.MessagesContext) {
	msgs.Stop()
	name := cons.CachedInfo().Name
	l.background.Go(func() {
		// A user who may not delete it leaves it for the server to drop
		// (consumerIdle): the refusal ends the wait at once.
		ctx, release := l.guard(context.Background())
		defer release()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l.stream.DeleteConsumer(ctx, name)
	})
}

// emptied returns an error wrapping statesync.ErrEmptied if the stream,
// as its leader tells, holds nothing from r.next on though its sequence
// went up to upTo: its messages were purged, and none will come. If the
// leader does not say, the read waits on, as it would have.
func (l *Log) emptied(ctx context.Context, r *reader, upTo uint64) error {
	attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	info, err := l.stream.Info(attempt)
	if err != nil {
		return nil
	}
	st := info.State
	if st.LastSeq < upTo || st.Msgs > 0 && st.LastSeq >= r.next {
		return nil
	}
	return fmt.Errorf("%s: purged up to %d: %w", l.name, st.LastSeq, statesync.ErrEmptied)
}

// reader turns stream messages into log entries: it notices gaps and
// reassembles chunked snapshots.
type reader struct {
	log  *Log
	ctx  context.Context // the read's, for looking back at chunks
	next uint64          // the sequence expected next
	gap  bool            // entries were skipped and no snapshot has covered them yet
	// check, until the first message comes, is the entry it should be
	// (ReadAfter), if the stream still holds it.
	check *statesync.Position

	chunkID    string
	chunkCount int
	chunks     [][]byte
}

// add turns the message at seq into an entry; ok is false for a message
// that holds none by itself (a foreign one after a gap, a chunk of a
// snapshot not yet whole).
func (r *reader) add(seq uint64, h nats.Header, data []byte) (e statesync.Entry, ok bool, err error) {
	if seq != r.next {
		r.gap = true
		r.chunks = nil
	}
	r.next = seq + 1
	if h.Get(HeaderKind) == "" && h.Get(HeaderFormat) == "" {
		// Something other than sharedconfig published on the config's
		// subject. It holds no state: readers step over it (and say so)
		// rather than stop. Where entries before it were dropped, the
		// snapshot that covers them comes later.
		if r.gap {
			return statesync.Entry{}, false, nil
		}
		return statesync.Entry{Position: statesync.Position{Revision: seq}, Foreign: fmt.Sprintf("not a sharedconfig entry (no %s header), %d bytes", HeaderKind, len(data))}, true, nil
	}
	if h.Get(HeaderKind) == "" {
		return r.bad(seq, "not a sharedconfig entry (it has no %s header)", HeaderKind)
	}
	if v := h.Get(HeaderFormat); v != FormatVersion {
		return r.bad(seq, "wire format %q is not one this program reads (it reads %s)", v, FormatVersion)
	}
	kind := h.Get(HeaderKind)
	if kind != KindSnapshotChunk {
		r.chunks = nil
	}
	switch kind {
	case KindUpdate:
		unconditional := h.Get(HeaderUnconditional) != ""
		switch {
		case r.gap && unconditional:
			return statesync.Entry{}, false, nil // no state of its own: what follows decides
		case r.gap:
			return r.bad(seq, "%w", statesync.ErrStateGone)
		}
		return statesync.Entry{Position: statesync.Position{Revision: seq}, Data: data, Unconditional: unconditional}, true, nil
	case KindSnapshot:
		r.gap = false
		return statesync.Entry{Position: statesync.Position{Revision: seq}, Snapshot: true, Data: data}, true, nil
	case KindSnapshotChunk:
		return r.addChunk(seq, h, data)
	default:
		return r.bad(seq, "unknown entry kind %q", kind)
	}
}

// addChunk adds one chunk of a snapshot; the last chunk of a whole run
// yields the snapshot.
func (r *reader) addChunk(seq uint64, h nats.Header, data []byte) (statesync.Entry, bool, error) {
	var i, n int
	if _, err := fmt.Sscanf(h.Get(HeaderChunk), "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return r.bad(seq, "snapshot chunk header %q is not i/n", h.Get(HeaderChunk))
	}
	id := h.Get(HeaderSnapshot)
	if i == 0 {
		r.chunkID, r.chunkCount, r.chunks = id, n, nil
	}
	if (id != r.chunkID || n != r.chunkCount || i != len(r.chunks)) && i == n-1 && i > 0 {
		// The last chunk of a run this read started inside: the run is
		// whole, and its snapshot may hold state no entry before it does
		// (an import), so it is read whole from the stream.
		if earlier, ok := r.log.chunksBefore(r.ctx, seq, id, n); ok {
			r.chunkID, r.chunkCount, r.chunks = id, n, earlier
		}
	}
	if id != r.chunkID || n != r.chunkCount || i != len(r.chunks) {
		// Part of a run that was never finished, or whose start this
		// reader is past: it holds no state. After a gap, its start was
		// removed by hand (compaction removes only what precedes a whole
		// run): the state the run held is gone.
		r.chunks = nil
		if r.gap {
			return r.bad(seq, "%w", statesync.ErrStateGone)
		}
		return statesync.Entry{}, false, nil
	}
	r.chunks = append(r.chunks, data)
	if len(r.chunks) < n {
		return statesync.Entry{}, false, nil
	}
	whole := bytes.Join(r.chunks, nil)
	r.chunks, r.gap = nil, false
	return statesync.Entry{Position: statesync.Position{Revision: seq}, Snapshot: true, Data: whole}, true, nil
}

// checkFirst looks at the first message of a ReadAfter. If it is the entry
// to check (checked), it must have its id; it is not delivered. If that
// entry is gone, the read goes on as across a gap: a snapshot must come
// before any update.
func (r *reader) checkFirst(seq uint64, h nats.Header, upTo uint64) (done, checked bool, err error) {
	want := *r.check
	r.check = nil
	if seq != want.Revision {
		// The entry went: compaction leaves a snapshot first, so an update
		// first means a purge by hand removed the state it changes.
		r.next, r.gap = want.Revision+1, true
		return want.Revision >= upTo, want.Revision >= upTo, nil
	}
	r.next = seq + 1
	if id := h.Get(jetstream.MsgIDHeader); id != want.ID {
		return false, true, fmt.Errorf("%s: its entry %d is not the one read (%s but %s): %w", r.log.name, seq, want.ID, id, statesync.ErrReplaced)
	}
	return seq >= upTo, true, nil
}

// bad is the answer for the entry at seq that does not read.
func (r *reader) bad(seq uint64, format string, args ...any) (statesync.Entry, bool, error) {
	return statesync.Entry{}, false, fmt.Errorf("%s: %w", r.log.name, &statesync.EntryError{Revision: seq, Err: fmt.Errorf(format, args...)})
}

// chunksBefore reads the n-1 chunks of snapshot id that end just before
// seq, the run's last; ok is false if the stream no longer holds them all.
func (l *Log) chunksBefore(ctx context.Context, seq uint64, id string, n int) ([][]byte, bool) {
	if seq < uint64(n) {
		return nil, false
	}
	chunks := make([][]byte, 0, n)
	for i := range n - 1 {
		m, err := l.getMsg(ctx, seq-uint64(n-1-i))
		if err != nil || m.Header.Get(HeaderKind) != KindSnapshotChunk || m.Header.Get(HeaderSnapshot) != id ||
			m.Header.Get(HeaderChunk) != fmt.Sprintf("%d/%d", i, n) {
			return nil, false
		}
		chunks = append(chunks, m.Data)
	}
	return chunks, true
}
