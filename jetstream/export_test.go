package jetstream

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublishFunc is the signature of the publish step tests may wrap.
type PublishFunc = func(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)

// WrapPublish replaces the log's publish step, to lose acknowledgements.
func (l *Log) WrapPublish(wrap func(PublishFunc) PublishFunc) { l.publish = wrap(l.publish) }

// PurgeFunc is the signature of the purge step tests may wrap.
type PurgeFunc = func(ctx context.Context, opts ...jetstream.StreamPurgeOpt) error

// WrapPurge replaces the log's purge step (after a chunked snapshot).
func (l *Log) WrapPurge(wrap func(PurgeFunc) PurgeFunc) { l.purge = wrap(l.purge) }

// DirectInbox is the prefix of the reply subjects of the log's direct
// gets ("" before its first).
func (l *Log) DirectInbox() string { return l.directInbox }
