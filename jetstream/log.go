package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

	// Batched direct gets share one reply subscription for the log's life:
	// a subscription per request would cost the server a subscribe and an
	// unsubscribe every time a writer loses a race. directSlot (capacity 1)
	// is held by the one request collecting its replies; a channel, so that
	// waiting for it honours a context.
	directSlot  chan struct{}
	directSub   *nats.Subscription
	directInbox string
	directReqs  uint64

	// publish is JetStream's PublishMsg and purge the stream's Purge; tests
	// replace them to lose answers.
	publish func(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
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
	l := &Log{nc: nc, js: js, name: StreamName(scope, name), subject: Subject(scope, name), maxPayload: int(nc.MaxPayload()), writer: o.Writer, directSlot: make(chan struct{}, 1)}
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
	l.purge = l.stream.Purge
	if err := checkStreamConfig(l.stream.CachedInfo().Config, l.subject, l.maxPayload); err != nil {
		return nil, fmt.Errorf("stream %s exists with settings sharedconfig cannot use: %w", l.name, err)
	}
	return l, nil
}

// checkStreamConfig names every setting of an existing stream under which
// entries could be lost, dropped, refused or mixed with others.
func checkStreamConfig(c jetstream.StreamConfig, subject string, maxPayload int) error {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(c.Subjects) != 1 || c.Subjects[0] != subject {
		bad("subjects %v (want [%s])", c.Subjects, subject)
	}
	if c.Storage != jetstream.FileStorage {
		bad("storage %s (entries vanish when the server restarts; want file)", strings.ToLower(c.Storage.String()))
	}
	if c.PersistMode == jetstream.AsyncPersistMode {
		bad("persist mode async (acknowledged entries can be lost if the server dies; want default)")
	}
	if c.NoAck {
		bad("no-ack (the server never confirms a write; want acks)")
	}
	if c.Retention != jetstream.LimitsPolicy {
		bad("retention %s (drops entries once consumed; want limits)", strings.ToLower(c.Retention.String()))
	}
	limit := "drops the oldest entries"
	if c.Discard == jetstream.DiscardNew {
		limit = "refuses writes once reached"
	}
	if c.MaxMsgs > 0 {
		bad("max messages %d (%s; want unlimited)", c.MaxMsgs, limit)
	}
	if c.MaxBytes > 0 {
		bad("max bytes %d (%s; want unlimited)", c.MaxBytes, limit)
	}
	if c.MaxAge > 0 {
		bad("max age %s (drops entries as they age; want unlimited)", c.MaxAge)
	}
	if c.MaxMsgsPerSubject > 0 {
		bad("max messages per subject %d (drops or refuses entries; want unlimited)", c.MaxMsgsPerSubject)
	}
	if c.MaxMsgSize > 0 && int(c.MaxMsgSize) < maxPayload {
		bad("max message size %d bytes (refuses entries the server's max payload of %d bytes allows; want unlimited)", c.MaxMsgSize, maxPayload)
	}
	if !c.AllowRollup {
		bad("rollups not allowed (compaction writes its snapshot as a rollup; want allow_rollup_hdrs)")
	}
	if c.DenyPurge {
		bad("deny purge (compaction drops entries with rollups and purges; want purges allowed)")
	}
	if c.Sealed {
		bad("sealed (accepts no writes)")
	}
	if c.Mirror != nil {
		bad("a mirror of stream %s (accepts no writes)", c.Mirror.Name)
	}
	if len(c.Sources) > 0 {
		bad("sources (messages copied from other streams would break the sequence of entries)")
	}
	if c.AllowMsgCounter {
		bad("message counters (accepts only counter increments)")
	}
	if c.SubjectDeleteMarkerTTL > 0 {
		bad("subject delete markers (the server would add messages that are not entries)")
	}
	if c.Duplicates > 0 && c.Duplicates < minDuplicates {
		bad("duplicate window %s (a write retried after a lost answer could land twice; want at least %s)", c.Duplicates, minDuplicates)
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

// Replicas is how many servers hold the stream.
func (l *Log) Replicas() int { return max(l.stream.CachedInfo().Config.Replicas, 1) }

// Conn is the connection the log uses.
func (l *Log) Conn() *nats.Conn { return l.nc }

// Stream is the JetStream stream the log is on.
func (l *Log) Stream() jetstream.Stream { return l.stream }

// Notify implements statesync.Notifier with a plain subscription to the
// config's subject: every message stored in the stream is published there.
func (l *Log) Notify(fn func()) (stop func(), err error) {
	sub, err := l.nc.Subscribe(l.subject, func(*nats.Msg) { fn() })
	if err != nil {
		return nil, fmt.Errorf("%s: watching for changes: %w", l.name, err)
	}
	return func() { sub.Unsubscribe() }, nil
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
