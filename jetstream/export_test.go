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
