package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
