package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LastRevision implements statesync.Log. The stream holds only the config's
// subject, so its last message for that subject is its last entry: one
// get of that message answers, which costs the server far less than the
// stream's info (its whole configuration and state as JSON, through the
// JetStream API's queue) and so is what makes a REFRESH with nothing to read
// one round trip. The leader answers, so the revision is current even on
// replicated streams. Where no message is left to ask for (everything
// purged by hand), or the get fails (a deleted stream has no one to answer
// a direct get), the stream's info says where the sequence stands, or why
// it cannot.
func (l *Log) LastRevision(ctx context.Context) (uint64, error) {
	var last uint64
	err := l.untilElected(ctx, func(ctx context.Context) error {
		if seq, found, err := l.lastMessageSeq(ctx); err == nil && found {
			last = seq
			return nil
		}
		info, err := l.stream.Info(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, describeStreamError(err))
		}
		last = info.State.LastSeq
		return nil
	})
	return last, err
}

// lastMessageSeq returns the sequence of the stream's last message for the
// config's subject; found is false when there is none. On a stream with one
// replica that allows them a direct get asks (the one server is the
// leader); otherwise the leader's message get does, since any replica may
// answer a direct get, a lagging one too.
func (l *Log) lastMessageSeq(ctx context.Context) (seq uint64, found bool, err error) {
	cfg := l.stream.CachedInfo().Config
	req := fmt.Appendf(nil, `{"last_by_subj":%q}`, l.subject)
	if cfg.AllowDirect && cfg.Replicas <= 1 {
		msg, err := l.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+l.name, req)
		if err != nil {
			return 0, false, err
		}
		return l.directLastSeq(msg)
	}
	msg, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+l.name, req)
	if err != nil {
		return 0, false, err
	}
	return l.leaderLastSeq(msg.Data)
}

// directLastSeq reads a direct get's answer. Only this stream's answer
// counts: a mirror that serves direct gets for it may lag.
func (l *Log) directLastSeq(msg *nats.Msg) (uint64, bool, error) {
	if status := msg.Header.Get("Status"); status != "" {
		if status == "404" {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("asking for the last entry: %s %s", status, msg.Header.Get("Description"))
	}
	if msg.Header.Get(jetstream.StreamHeader) != l.name {
		return 0, false, nil
	}
	seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("asking for the last entry: the answer has no sequence")
	}
	return seq, true, nil
}

// errCodeNoMessage is JSNoMessageFoundErr: the stream holds no message for
// the subject.
const errCodeNoMessage = 10037

// leaderLastSeq reads the answer of a message get sent to the leader.
func (l *Log) leaderLastSeq(data []byte) (uint64, bool, error) {
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return 0, false, fmt.Errorf("asking for the last entry: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == errCodeNoMessage:
		return 0, false, nil
	case resp.Error != nil:
		return 0, false, resp.Error
	case resp.Message == nil:
		return 0, false, fmt.Errorf("asking for the last entry: the answer holds no message")
	}
	return resp.Message.Seq, true, nil
}
