package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConfigInfo describes the stream of one config.
type ConfigInfo struct {
	Scope, Name, Stream string
	// LastRevision is the stream's last sequence; LastChange when it was
	// written.
	LastRevision uint64
	LastChange   time.Time
	// Entries and Bytes are what the stream holds now.
	Entries, Bytes uint64
	Replicas       int
	// Unusable says why sharedconfig cannot use the stream as the config
	// (settings another program gave it); empty when it can.
	Unusable string
}

// ListConfigs describes every config on the server that nc reaches, in
// scope and name order.
func ListConfigs(ctx context.Context, nc *nats.Conn) ([]ConfigInfo, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, release := guardAPI(ctx, nc, isSubject("$JS.API.STREAM.LIST"))
	defer release()
	lister := js.ListStreams(ctx, jetstream.WithStreamListSubject("sharedconfig.>"))
	var out []ConfigInfo
	for info := range lister.Info() {
		scope, name, ok := ParseStreamName(info.Config.Name)
		if !ok || !slices.Contains(info.Config.Subjects, Subject(scope, name)) {
			continue // not a config's stream
		}
		// A stream named as a config and on its subject is the config's,
		// even with settings sharedconfig cannot use: listed, with why.
		out = append(out, configInfo(scope, name, info, int(nc.MaxPayload())))
	}
	if err := lister.Err(); err != nil {
		err = refusedOr(ctx, err)
		return nil, fmt.Errorf("listing streams: %w", describeJSError(err))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scope != out[j].Scope {
			return out[i].Scope < out[j].Scope
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// ErrNoConfig: the server holds no stream for the config.
var ErrNoConfig = errors.New("no such config on the server")

// StatConfig describes the stream of scope/name, or returns ErrNoConfig.
func StatConfig(ctx context.Context, nc *nats.Conn, scope, name string) (ConfigInfo, error) {
	s, err := LookUpConfig(ctx, nc, scope, name)
	if err != nil {
		return ConfigInfo{}, err
	}
	return configInfo(scope, name, s.CachedInfo(), int(nc.MaxPayload())), nil
}

// LookUpConfig returns the stream of scope/name, with its info as of now,
// or ErrNoConfig; LogOptions.Stream takes it, so that opening the log
// after asking whether the config exists costs no second look-up.
func LookUpConfig(ctx context.Context, nc *nats.Conn, scope, name string) (jetstream.Stream, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	stream := StreamName(scope, name)
	ctx, release := guardAPI(ctx, nc, func(subject string) bool { return aboutStream(subject, stream) })
	defer release()
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, noConfig(scope, name, stream)
	}
	err = refusedOr(ctx, err)
	if err != nil {
		return nil, fmt.Errorf("opening stream %s: %w", stream, describeJSError(err))
	}
	return s, nil
}

func configInfo(scope, name string, info *jetstream.StreamInfo, maxPayload int) ConfigInfo {
	c := ConfigInfo{
		Scope: scope, Name: name, Stream: info.Config.Name,
		LastRevision: info.State.LastSeq, LastChange: info.State.LastTime,
		Entries: info.State.Msgs, Bytes: info.State.Bytes, Replicas: max(info.Config.Replicas, 1),
	}
	if err := checkStreamConfig(info.Config, Subject(scope, name), maxPayload); err != nil {
		c.Unusable = err.Error()
	}
	return c
}

// noConfig is ErrNoConfig for scope/name.
func noConfig(scope, name, stream string) error {
	return fmt.Errorf("%s/%s (stream %s): %w", scope, name, stream, ErrNoConfig)
}

// DeleteConfig deletes the stream of scope/name, and with it every entry.
func DeleteConfig(ctx context.Context, nc *nats.Conn, scope, name string) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream := StreamName(scope, name)
	ctx, release := guardAPI(ctx, nc, func(subject string) bool { return aboutStream(subject, stream) })
	defer release()
	s, err := js.Stream(ctx, stream)
	if err == nil {
		// A stream that only looks like a config's by its name is someone
		// else's: refuse it, as opening it does.
		if err := checkStreamConfig(s.CachedInfo().Config, Subject(scope, name), int(nc.MaxPayload())); err != nil {
			return fmt.Errorf("stream %s is not one sharedconfig can use as %s/%s, so it is not deleted: %w (if it is yours to delete, 'nats stream rm %s' does)", stream, scope, name, err, stream)
		}
		err = js.DeleteStream(ctx, stream)
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return noConfig(scope, name, stream)
	}
	err = refusedOr(ctx, err)
	if err != nil {
		return fmt.Errorf("deleting stream %s: %w", stream, describeJSError(err))
	}
	return nil
}

// SubjectTakenBy names the stream, not sharedconfig's, that takes the
// subject of scope/name, and so keeps the config from being created; ""
// if no stream does.
func SubjectTakenBy(ctx context.Context, nc *nats.Conn, scope, name string) (string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	ctx, release := guardAPI(ctx, nc, isSubject("$JS.API.STREAM.NAMES"))
	defer release()
	owner, err := js.StreamNameBySubject(ctx, Subject(scope, name))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", nil
	}
	err = refusedOr(ctx, err)
	if err != nil {
		return "", describeJSError(err)
	}
	return owner, nil
}
