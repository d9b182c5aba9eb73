package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// LastPosition implements statesync.Log. The stream holds only
// the config's subject, so its last message for that subject is its last
// entry: one get of that message says where the log ends and which entry
// stands there, which costs the server far less than the stream's info (its
// whole configuration and state as JSON, through the JetStream API's queue)
// and so is what makes a REFRESH with nothing to read one round trip. The
// leader answers, so the position is current even on replicated streams.
// Where no message is left to ask for (everything purged by hand), or the
// get fails (a deleted stream has no one to answer a direct get), the
// stream's info says where the sequence stands, or why it cannot, and the
// position has no ID.
func (l *Log) LastPosition(ctx context.Context) (statesync.Position, error) {
	var last statesync.Position
	err := l.untilElected(ctx, func(ctx context.Context) error {
		if seq, h, err := l.lastMessage(ctx); err == nil && seq > 0 {
			last = statesync.Position{Revision: seq, ID: h.Get(jetstream.MsgIDHeader)}
			return nil
		}
		info, err := l.stream.Info(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, describeStreamError(err))
		}
		last = statesync.Position{Revision: info.State.LastSeq}
		return nil
	})
	return last, err
}

// lastMessage returns the sequence and headers of the stream's last message
// for the config's subject; seq is 0 when there is none. On a stream with
// one replica that allows them a direct get asks (the one server is the
// leader); otherwise the leader's message get does, since any replica may
// answer a direct get, a lagging one too.
func (l *Log) lastMessage(ctx context.Context) (seq uint64, h nats.Header, err error) {
	cfg := l.stream.CachedInfo().Config
	req := fmt.Appendf(nil, `{"last_by_subj":%q}`, l.subject)
	if cfg.AllowDirect && cfg.Replicas <= 1 {
		msg, err := l.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+l.name, req)
		if err != nil {
			return 0, nil, err
		}
		return l.directLast(msg)
	}
	msg, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+l.name, req)
	if err != nil {
		return 0, nil, err
	}
	return l.leaderLast(msg.Data)
}

// directLast reads a direct get's answer. Only this stream's answer counts:
// a mirror that serves direct gets for it may lag.
func (l *Log) directLast(msg *nats.Msg) (uint64, nats.Header, error) {
	if status := msg.Header.Get("Status"); status != "" {
		if status == "404" {
			return 0, nil, nil
		}
		return 0, nil, fmt.Errorf("asking for the last entry: %s %s", status, msg.Header.Get("Description"))
	}
	if msg.Header.Get(jetstream.StreamHeader) != l.name {
		return 0, nil, nil
	}
	seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("asking for the last entry: the answer has no sequence")
	}
	return seq, msg.Header, nil
}

// errCodeNoMessage is JSNoMessageFoundErr: the stream holds no message for
// the subject.
const errCodeNoMessage = 10037

// leaderLast reads the answer of a message get sent to the leader.
func (l *Log) leaderLast(data []byte) (uint64, nats.Header, error) {
	var resp struct {
		Message *struct {
			Seq     uint64 `json:"seq"`
			Headers []byte `json:"hdrs"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return 0, nil, fmt.Errorf("asking for the last entry: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == errCodeNoMessage:
		return 0, nil, nil
	case resp.Error != nil:
		return 0, nil, resp.Error
	case resp.Message == nil:
		return 0, nil, fmt.Errorf("asking for the last entry: the answer holds no message")
	}
	h := nats.Header{}
	if len(resp.Message.Headers) > 0 {
		var err error
		if h, err = nats.DecodeHeadersMsg(resp.Message.Headers); err != nil {
			return 0, nil, fmt.Errorf("asking for the last entry: %w", err)
		}
	}
	return resp.Message.Seq, h, nil
}

// LastEntry is the position of the last entry of scope/name's log, and
// the server's time on it, by a direct get of its last message, without
// looking the stream up first: for a process that holds a copy bound to
// an entry and wants to know, in one request, whether the log still ends
// there. Anyone who may publish on the subject chooses a message's ID, so
// the time, which the server gives, tells the entry from a copy of its ID.
// Only for a server that is not part of a cluster (its one copy of the
// stream answers, where on a cluster any replica may, a lagging one too)
// and a stream that allows direct gets: a server that refuses the request
// does not answer it, and the caller waits for its context. A position
// with no ID means it cannot tell (no such stream, no entry): the caller
// then opens the log.
func LastEntry(ctx context.Context, nc *nats.Conn, scope, name string) (statesync.Position, time.Time, error) {
	if err := ValidateName("scope", scope); err != nil {
		return statesync.Position{}, time.Time{}, err
	}
	if err := ValidateName("name", name); err != nil {
		return statesync.Position{}, time.Time{}, err
	}
	if nc.ConnectedClusterName() != "" {
		return statesync.Position{}, time.Time{}, nil
	}
	l := &Log{nc: nc, name: StreamName(scope, name), subject: Subject(scope, name)}
	req := fmt.Appendf(nil, `{"last_by_subj":%q}`, l.subject)
	msg, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+l.name, req)
	if err != nil {
		return statesync.Position{}, time.Time{}, err
	}
	seq, h, err := l.directLast(msg)
	if err != nil || seq == 0 {
		return statesync.Position{}, time.Time{}, err
	}
	at, err := time.Parse(time.RFC3339Nano, h.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return statesync.Position{}, time.Time{}, nil
	}
	return statesync.Position{Revision: seq, ID: h.Get(jetstream.MsgIDHeader)}, at, nil
}
