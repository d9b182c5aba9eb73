package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Log is a statesync.Log on one JetStream stream.
type Log struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	stream     jetstream.Stream
	name       string // the stream's name
	subject    string
	maxPayload int
	writer     string
	options    LogOptions // as opened, to create the stream again

	// Batched direct gets share one reply subscription for the log's life:
	// a subscription per request would cost the server a subscribe and an
	// unsubscribe every time a writer loses a race. directSlot (capacity 1)
	// is held by the one request collecting its replies; a channel, so that
	// waiting for it honours a context.
	directSlot  chan struct{}
	directSub   *nats.Subscription
	directInbox string
	closed      atomic.Bool
	// perms hears the server refuse the connection what it may not do.
	perms *permWatch

	// For Close: subs, the subscriptions Notify and Listen handed out and
	// not yet stopped; background, the consumer deletions still running.
	subsMu     sync.Mutex
	subs       map[*nats.Subscription]struct{}
	background sync.WaitGroup

	// publish is JetStream's PublishMsg and purge the stream's Purge; tests
	// replace them to lose answers.
	publish func(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
	// waiting hears that a request waits for a leader election.
	waiting func(reason string)
	purge   func(ctx context.Context, opts ...jetstream.StreamPurgeOpt) error
}

// LogOptions configure the stream OpenLog creates.
type LogOptions struct {
	// Replicas is the stream's replication factor when OpenLog creates it;
	// 0 means 1.
	Replicas int
	// Writer names this process in the entries it writes (the
	// Sharedconfig-Writer header), so that others can say who changed what.
	Writer string
	// Waiting, if set, hears when a request waits for the cluster or the
	// stream to elect a leader (the open, and reading the last revision,
	// go on trying until their context ends), once per wait.
	Waiting func(reason string)
	// Warning, if set, hears what went wrong without failing the call that
	// met it: the entries a whole chunked snapshot covers could not be
	// dropped (the snapshot is in use; the next compaction drops them).
	Warning func(msg string)
	// Stream, if set, is the config's stream as LookUpConfig just found
	// it: OpenLog then neither looks it up again nor creates it.
	Stream jetstream.Stream
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
	l := &Log{nc: nc, js: js, name: StreamName(scope, name), subject: Subject(scope, name), maxPayload: int(nc.MaxPayload()), writer: o.Writer, options: o, directSlot: make(chan struct{}, 1), waiting: o.Waiting, perms: watchPermissions(nc)}
	l.publish = js.PublishMsg
	if l.stream = o.Stream; l.stream == nil || l.stream.CachedInfo().Config.Name != l.name {
		if l.stream, err = l.openStream(ctx, scope, name, o); err != nil {
			return nil, err
		}
	}
	l.purge = l.stream.Purge
	if err := checkStreamConfig(l.stream.CachedInfo().Config, l.subject, l.maxPayload); err != nil {
		return nil, fmt.Errorf("stream %s exists with settings sharedconfig cannot use: %w", l.name, err)
	}
	return l, nil
}

// openStream looks the stream up, creating it if it does not exist, waiting
// out a leader election.
func (l *Log) openStream(ctx context.Context, scope, name string, o LogOptions) (stream jetstream.Stream, err error) {
	err = l.untilElected(ctx, func(ctx context.Context) error {
		stream, err = l.lookUpOrCreate(ctx, scope, name, o)
		return err
	})
	if refused := (*PermissionError)(nil); errors.As(err, &refused) {
		return nil, fmt.Errorf("opening stream %s: %w", l.name, refused)
	}
	return stream, err
}

// untilElected runs try until it succeeds or fails for another reason than
// a leader election or a connection that is down (a read, unlike a write,
// may wait for it to come back), or ctx ends. While the cluster or the
// stream elects a leader the server answers "not available", or nothing at
// all, so each try gets a bounded time of its own. A request the server
// refuses this user is not answered either: that ends it at once.
func (l *Log) untilElected(ctx context.Context, try func(ctx context.Context) error) error {
	told := false
	gaveUp := func(err error) error {
		if notSent(err) { // the error alone would not say that time ran out
			return fmt.Errorf("%w while %w", ctx.Err(), err)
		}
		return err
	}
	for {
		guarded, release := l.guard(ctx)
		attempt, cancel := context.WithTimeout(guarded, electionAttemptTimeout)
		err := l.orRefused(guarded, try(attempt))
		cancel()
		release()
		if err == nil || !electing(err) && !notSent(err) {
			return err
		}
		if ctx.Err() != nil {
			return gaveUp(err)
		}
		if !told && l.waiting != nil && electing(err) {
			l.waiting(fmt.Sprintf("no answer yet about stream %s, waiting for its leader (the cluster or the stream may be electing one): %v", l.name, err))
			told = true
		}
		if !sleep(ctx, electionRetryWait) {
			return gaveUp(err)
		}
	}
}

const (
	// electionAttemptTimeout bounds one try at a request that a leader
	// answers: a server with no leader for it may not answer at all.
	electionAttemptTimeout = 2 * time.Second
	// electionRetryWait is the pause between tries while a leader is
	// elected.
	electionRetryWait = 250 * time.Millisecond
)

// electing reports whether a request failed because no leader could answer
// yet, so that trying again may succeed.
func electing(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 10005: not enough peers for the stream's replicas yet, as while a
		// cluster forms or a node restarts.
		return apiErr.ErrorCode == errCodeClusterNotAvailable || apiErr.ErrorCode == errCodeNoPeers ||
			apiErr.Code == 503 && outOfStorage(err) == nil
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// lookUpOrCreate is one try at opening the stream.
func (l *Log) lookUpOrCreate(ctx context.Context, scope, name string, o LogOptions) (jetstream.Stream, error) {
	stream, err := l.js.Stream(ctx, l.name)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		if err != nil {
			return nil, fmt.Errorf("opening stream %s: %w", l.name, describeJSError(err))
		}
		return stream, nil
	}
	stream, err = l.createStream(ctx, jetstream.StreamConfig{
		Name:        l.name,
		Description: "sharedconfig " + scope + "/" + name,
		Subjects:    []string{l.subject},
		Storage:     jetstream.FileStorage,
		Replicas:    max(o.Replicas, 1),
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
		stream, err = l.js.Stream(ctx, l.name)
	}
	if err != nil {
		return nil, fmt.Errorf("creating stream %s: %w", l.name, l.describeCreateError(ctx, err))
	}
	return stream, nil
}

// jsErrStreamCreate is the server's code for a stream it could not create,
// as when it cannot make the stream's store.
const jsErrStreamCreate = 10049

// storeRetry bounds the tries at a store the server cannot make yet, and
// storeRetryWait is the pause between them.
const (
	storeRetry     = 2 * time.Second
	storeRetryWait = 100 * time.Millisecond
)

// createStream creates the stream, trying again for a while when the
// server cannot make its store: right after a config of the same name was
// destroyed, the server removes the old store in the background, and a
// create can fail until it is gone. A store it can never make fails after
// storeRetry, with the server's reason.
func (l *Log) createStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	giveUp := time.Now().Add(storeRetry)
	for {
		stream, err := l.js.CreateStream(ctx, cfg)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrStreamCreate || time.Now().After(giveUp) {
			return stream, err
		}
		select {
		case <-ctx.Done():
			return stream, err
		case <-time.After(storeRetryWait):
		}
	}
}

// jsErrSubjectOverlap is the server's code for a new stream whose subjects
// another stream already takes.
const jsErrSubjectOverlap = 10065

// lookupTimeout bounds the look-up that names the stream in the way.
const lookupTimeout = 5 * time.Second

// describeCreateError names the stream that holds the config's subject when
// that is why the config's stream cannot be created: the server says only
// that subjects overlap, and the user must find and change that stream.
func (l *Log) describeCreateError(ctx context.Context, err error) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrSubjectOverlap {
		return describeJSError(err)
	}
	// The create may have spent ctx's time: the lookup gets time of its own.
	look, release := l.perms.guard(context.WithoutCancel(ctx), isSubject("$JS.API.STREAM.NAMES"))
	defer release()
	look, cancel := context.WithTimeout(look, lookupTimeout)
	defer cancel()
	owner, lookErr := l.js.StreamNameBySubject(look, l.subject)
	if lookErr != nil {
		return fmt.Errorf("another stream already takes the subject %s (%w)", l.subject, err)
	}
	return fmt.Errorf("stream %s, not sharedconfig's, already takes the subject %s: take it out of that stream's subjects, or use another scope or name (%w)", owner, l.subject, err)
}

// checkStreamConfig names every setting of an existing stream under which
// entries could be lost, dropped, refused or mixed with others.
func checkStreamConfig(c jetstream.StreamConfig, subject string, maxPayload int) error {
	limit := "drops the oldest entries"
	if c.Discard == jetstream.DiscardNew {
		limit = "refuses writes once reached"
	}
	mirror := ""
	if c.Mirror != nil {
		mirror = c.Mirror.Name
	}
	// Each row: the setting is wrong, and what it is and does.
	checks := []struct {
		wrong bool
		what  string
	}{
		{len(c.Subjects) != 1 || c.Subjects[0] != subject, fmt.Sprintf("subjects %v (want [%s])", c.Subjects, subject)},
		{c.Storage != jetstream.FileStorage, fmt.Sprintf("storage %s (entries vanish when the server restarts; want file)", strings.ToLower(c.Storage.String()))},
		{c.PersistMode == jetstream.AsyncPersistMode, "persist mode async (acknowledged entries can be lost if the server dies; want default)"},
		{c.NoAck, "no-ack (the server never confirms a write; want acks)"},
		{c.Retention != jetstream.LimitsPolicy, fmt.Sprintf("retention %s (drops entries once consumed; want limits)", strings.ToLower(c.Retention.String()))},
		{c.MaxMsgs > 0, fmt.Sprintf("max messages %d (%s; want unlimited)", c.MaxMsgs, limit)},
		{c.MaxBytes > 0, fmt.Sprintf("max bytes %d (%s; want unlimited)", c.MaxBytes, limit)},
		{c.MaxAge > 0, fmt.Sprintf("max age %s (drops entries as they age; want unlimited)", c.MaxAge)},
		{c.MaxMsgsPerSubject > 0, fmt.Sprintf("max messages per subject %d (drops or refuses entries; want unlimited)", c.MaxMsgsPerSubject)},
		{c.MaxMsgSize > 0 && int(c.MaxMsgSize) < maxPayload, fmt.Sprintf("max message size %d bytes (refuses entries the server's max payload of %d bytes allows; want unlimited)", c.MaxMsgSize, maxPayload)},
		{!c.AllowRollup, "rollups not allowed (compaction writes its snapshot as a rollup; want allow_rollup_hdrs)"},
		{c.DenyPurge, "deny purge (compaction drops entries with rollups and purges; want purges allowed)"},
		{c.Sealed, "sealed (accepts no writes)"},
		{c.Mirror != nil, fmt.Sprintf("a mirror of stream %s (accepts no writes)", mirror)},
		{len(c.Sources) > 0, "sources (messages copied from other streams would break the sequence of entries)"},
		{c.AllowMsgCounter, "message counters (accepts only counter increments)"},
		{c.SubjectDeleteMarkerTTL > 0, "subject delete markers (the server would add messages that are not entries)"},
		{c.Duplicates > 0 && c.Duplicates < minDuplicates, fmt.Sprintf("duplicate window %s (a write retried after a lost answer could land twice; want at least %s)", c.Duplicates, minDuplicates)},
	}
	var problems []string
	for _, check := range checks {
		if check.wrong {
			problems = append(problems, check.what)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// minDuplicates is the shortest dedup window accepted: a retried write is
// recognised only within it, and a write retries for as long as its timeout.
const minDuplicates = time.Minute

// Name implements statesync.Log: the stream's name.
func (l *Log) Name() string { return l.name }

// Writer is the name this log's entries go by (Sharedconfig-Writer), if
// any.
func (l *Log) Writer() string { return l.writer }

// Replicas is how many servers hold the stream.
func (l *Log) Replicas() int { return max(l.stream.CachedInfo().Config.Replicas, 1) }

// DirectGetsRefused reports whether the server refused the log's
// connection a direct get on its stream: its reads ask the leader instead.
func (l *Log) DirectGetsRefused() bool { return l.perms.directRefusal(l.name) != nil }

// Conn is the connection the log uses.
func (l *Log) Conn() *nats.Conn { return l.nc }

// Stream is the JetStream stream the log is on.
func (l *Log) Stream() jetstream.Stream { return l.stream }

// Notify implements statesync.Log with a plain subscription to the
// config's subject: every message stored in the stream is published there.
func (l *Log) Notify(fn func()) (stop func(), err error) {
	pending := l.perms.followStarts(l.subject)
	before := l.nc.LastError()
	sub, err := l.nc.Subscribe(l.subject, func(*nats.Msg) { fn() })
	if err != nil {
		l.perms.followChecked(pending, nil)
		return nil, fmt.Errorf("%s: watching for changes: %w", l.name, err)
	}
	if refused := l.perms.followChecked(pending, l.subscriptionRefused(pending, before)); refused != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("%s: watching for changes: %w", l.name, refused)
	}
	return l.track(sub), nil
}

// subscriptionRefused is the server's refusal of the subscription to the
// config's subject that the Notify p just made, if the handler has not
// heard it already, or nil. The server answers a subscription it refuses
// before the round trip of a flush that follows, and nats.go keeps each
// error it gets as the connection's last error (never cleared: before is
// the one from before the subscription) and hands it to the handler. So a
// refusal, if any, came between before and the last error after the flush,
// and the handler is waited for until it has heard that one: an error
// that came after the refusal and took its place as the last error does
// not hide it. (A flush that fails is no refusal: follow mode says when
// the server answers again; nor is one not asked while the connection is
// down.)
func (l *Log) subscriptionRefused(p *pendingFollow, before error) *PermissionError {
	if !l.nc.IsConnected() || l.nc.FlushTimeout(attemptTimeout) != nil {
		return nil
	}
	last := l.nc.LastError()
	if last == nil || sameError(last, before) {
		return nil // no error since the subscription was made
	}
	if l.perms.heardUpTo(p, last, attemptTimeout) {
		return nil // followChecked says the refusal the handler heard
	}
	// The handler is held up: the last error is all there is to go by.
	if refused := readRefusal(last); refused != nil && refused.Subscribe && refused.Subject == l.subject {
		return refused
	}
	return nil
}

// track keeps sub for Close and returns the function that unsubscribes it.
func (l *Log) track(sub *nats.Subscription) (stop func()) {
	l.subsMu.Lock()
	defer l.subsMu.Unlock()
	if l.subs == nil {
		l.subs = map[*nats.Subscription]struct{}{}
	}
	l.subs[sub] = struct{}{}
	return func() {
		l.subsMu.Lock()
		delete(l.subs, sub)
		l.subsMu.Unlock()
		sub.Unsubscribe()
	}
}

// ErrLogClosed: the log was closed.
var ErrLogClosed = errors.New("the log is closed")

// Close releases what the log holds on its connection: the reply
// subscription of its reads, the subscriptions Notify and Listen handed out
// and not yet stopped, and the deletion of read consumers under way (it
// waits for them). Reads after Close fail with ErrLogClosed; call it once
// the reads have ended. The connection is the caller's, who closes it.
// Closing again does nothing.
func (l *Log) Close() error {
	l.closed.Store(true)
	l.directSlot <- struct{}{} // waits for a read under way (readStall at most)
	if l.directSub != nil {
		l.directSub.Unsubscribe()
		l.directSub = nil
	}
	<-l.directSlot
	l.subsMu.Lock()
	subs := l.subs
	l.subs = nil
	l.subsMu.Unlock()
	for sub := range subs {
		sub.Unsubscribe()
	}
	l.background.Wait()
	return nil
}

// TurnsSuffix makes a config's subject the subject of its writers' turns
// words, which no stream of a config stores (names hold no '.').
const TurnsSuffix = ".turns"

// Announce implements turns.Announcer with a plain publish on a subject
// beside the config's (its subject plus TurnsSuffix).
func (l *Log) Announce(word []byte) error { return l.nc.Publish(l.subject+TurnsSuffix, word) }

// Listen implements turns.Announcer with a plain subscription.
func (l *Log) Listen(fn func(word []byte)) (stop func(), err error) {
	sub, err := l.nc.Subscribe(l.subject+TurnsSuffix, func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("%s: listening to other writers: %w", l.name, err)
	}
	return l.track(sub), nil
}

// IsTurnsSubject: subject is a config's turns subject, or one writer's
// beside it (Hand).
func IsTurnsSubject(subject string) bool {
	if strings.HasSuffix(subject, TurnsSuffix) {
		return true
	}
	i := strings.LastIndexByte(subject, '.')
	return i > 0 && strings.HasSuffix(subject[:i], TurnsSuffix)
}

// Hand implements turns.Carrier with a request on the subject of the
// writer named to: the turns subject, a dot, and its name.
func (l *Log) Hand(ctx context.Context, to string, data []byte) ([]byte, error) {
	if !validToken(to) {
		return nil, fmt.Errorf("%q names no writer", to)
	}
	msg := nats.NewMsg(l.subject + TurnsSuffix + "." + to)
	msg.Data = data
	if l.writer != "" {
		msg.Header.Set(HeaderWriter, l.writer) // so that the entry can name who handed it
	}
	m, err := l.nc.RequestMsgWithContext(ctx, msg)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("%w (no responders): %w", turns.ErrNotTaken, err)
	}
	if err != nil {
		return nil, err
	}
	return m.Data, nil
}

// Take implements turns.Carrier with a plain subscription.
func (l *Log) Take(id string, fn func(data []byte, writer string, answer func([]byte))) (stop func(), err error) {
	if !validToken(id) {
		return nil, fmt.Errorf("%q names no writer", id)
	}
	sub, err := l.nc.Subscribe(l.subject+TurnsSuffix+"."+id, func(m *nats.Msg) {
		fn(m.Data, m.Header.Get(HeaderWriter), func(a []byte) {
			if l.isInbox(m.Reply) {
				m.Respond(a) // a hint: a lost answer costs the writer a wait
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: taking calls from other writers: %w", l.name, err)
	}
	return l.track(sub), nil
}

// isInbox: subject is a request's inbox, as nats.go makes them for
// Hand: the inbox prefix (its default, or the connection's own), then an
// id and a token. Anyone who may publish on the turns subject may hand a
// call and name any reply subject: an answer sent to any other would be
// published with this writer's permissions (an empty one on
// $JS.API.STREAM.DELETE.<stream> deletes that stream), or land among a
// consumer's messages or a direct get's replies, seen by any subscriber
// to _INBOX.>, and fail the read. A hander whose connection has another
// inbox prefix goes unanswered, and waits.
func (l *Log) isInbox(subject string) bool {
	rest, ok := strings.CutPrefix(subject, nats.InboxPrefix)
	if prefix := l.nc.Opts.InboxPrefix; !ok && prefix != "" {
		rest, ok = strings.CutPrefix(subject, prefix+".")
	}
	id, token, two := strings.Cut(rest, ".")
	return ok && two && id != "" && token != "" && !strings.Contains(token, ".")
}

// validToken: s can be one token of a subject.
func validToken(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsAny(s, ".*> \t\r\n")
}

// checkCreated returns an error wrapping statesync.ErrReplaced unless the
// stream is still the one created at created: a stream deleted and created
// again under the same name has a new creation time.
func (l *Log) checkCreated(ctx context.Context, created time.Time) error {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return describeStreamError(err)
	}
	if !info.Created.Equal(created) {
		return fmt.Errorf("the stream was created again at %s (it was created at %s): %w", info.Created.Format(time.RFC3339Nano), created.Format(time.RFC3339Nano), statesync.ErrReplaced)
	}
	return nil
}
