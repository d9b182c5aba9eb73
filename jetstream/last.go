package jetstream

import (
	"context"
	"encoding/json"
	"errors"
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
	return last, l.unanswered(ctx, err)
}

// lastMessage returns the sequence and headers of the stream's last message
// for the config's subject; seq is 0 when there is none. On a stream with
// one replica that allows them a direct get asks (the one server is the
// leader), unless the server refuses them to this connection; otherwise
// the leader's message get does, since any replica may answer a direct
// get, a lagging one too.
func (l *Log) lastMessage(ctx context.Context) (seq uint64, h nats.Header, err error) {
	req := fmt.Appendf(nil, `{"last_by_subj":%q}`, l.subject)
	if l.stream.CachedInfo().Config.Replicas <= 1 && l.direct() {
		direct, release := l.guardDirect(ctx)
		msg, err := l.nc.RequestWithContext(direct, directGetPrefix+l.name, req)
		refused := refusal(direct)
		release()
		if refused == nil {
			if err != nil {
				return 0, nil, err
			}
			return l.directLast(msg)
		}
		// Refused: from now on this connection asks the leader, which
		// serves the same answer.
	}
	m, err := l.leaderGet(ctx, req)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	return m.Sequence, m.Header, nil
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

// getMsg is the stream's message at seq, as nats.go's GetMsg gets it (by
// a direct get if the stream serves them), or by the leader's message get
// if the server refuses this connection direct gets.
func (l *Log) getMsg(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	if l.perms.directRefusal(l.name) == nil {
		direct, release := l.guardDirect(ctx)
		m, err := l.stream.GetMsg(direct, seq)
		refused := refusal(direct)
		release()
		if refused == nil {
			return m, err
		}
	}
	return l.leaderGet(ctx, fmt.Appendf(nil, `{"seq":%d}`, seq))
}

// leaderGet sends req (a JSApiMsgGetRequest) to the leader's message get
// of the log's stream, and reads the answer; jetstream.ErrMsgNotFound when
// there is no such message. Spoken by hand: nats.go's GetMsg uses direct
// gets on a stream that serves them, and has no way to ask the leader.
func (l *Log) leaderGet(ctx context.Context, req []byte) (*jetstream.RawStreamMsg, error) {
	msg, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+l.name, req)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Headers []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("asking for an entry: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == errCodeNoMessage:
		return nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, fmt.Errorf("asking for an entry: the answer holds no message")
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Seq, Header: nats.Header{}, Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Headers) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Headers); err != nil {
			return nil, fmt.Errorf("asking for an entry: %w", err)
		}
	}
	return m, nil
}

// LastEntry is the position of the last entry of scope/name's log, and
// the server's time on it, by a direct get of its last message, without
// looking the stream up first: for a process that holds a copy bound to
// an entry and wants to know, in one request, whether the log still ends
// there. Anyone who may publish on the subject chooses a message's ID, so
// the time, which the server gives, tells the entry from a copy of its ID.
// Only for a server that is not part of a cluster (its one copy of the
// stream answers, where on a cluster any replica may, a lagging one too)
// and a stream that allows direct gets: a server that does not serve them
// does not answer, and the caller waits for its context; one that refuses
// them to this user says so, and the error is a *PermissionError, at once
// (and at once again on the same connection, with no request). A
// position with no ID means it cannot tell (no such stream, no entry):
// the caller then opens the log.
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
	l := &Log{nc: nc, name: StreamName(scope, name), subject: Subject(scope, name), perms: watchPermissions(nc)}
	if refused := l.perms.directRefusal(l.name); refused != nil {
		return statesync.Position{}, time.Time{}, fmt.Errorf("%s: %w", l.name, refused)
	}
	req := fmt.Appendf(nil, `{"last_by_subj":%q}`, l.subject)
	direct, release := l.guardDirect(ctx)
	defer release()
	msg, err := nc.RequestWithContext(direct, directGetPrefix+l.name, req)
	if err != nil {
		return statesync.Position{}, time.Time{}, l.orRefused(direct, err)
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
