package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/sharedconfig/sharedconfig/internal/testmain"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

func TestMain(m *testing.M) {
	// A stream with a mirror or sources (settings refused) makes the server
	// wait up to 30s for its source consumer, in a goroutine that outlives
	// the server's shutdown.
	testmain.Run(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*stream).trySetupSourceConsumer.func3"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*stream).setupMirrorConsumer.func3"))
}

var logCount atomic.Int64

func openLog(t *testing.T, nc *nats.Conn) *jetstream.Log {
	t.Helper()
	l, err := jetstream.OpenLog(context.Background(), nc, "test", fmt.Sprint("log", logCount.Add(1)), jetstream.LogOptions{})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l
}

// openOther opens a second writer on l's stream.
func openOther(t *testing.T, nc *nats.Conn, l *jetstream.Log) *jetstream.Log {
	t.Helper()
	scope, name, _ := jetstream.ParseStreamName(l.Name())
	other, err := jetstream.OpenLog(context.Background(), nc, scope, name, jetstream.LogOptions{})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return other
}

// smallPayloadServer starts a server whose max payload is 64 KiB: the
// conformance suite's large snapshots are a few of the log's largest
// entries, so on it they are written in as many chunks as on a server of
// 1 MiB, for a sixteenth of the work.
func smallPayloadServer(t *testing.T) *localserver.Server {
	t.Helper()
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir(), MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func TestLogConformance(t *testing.T) {
	t.Parallel()
	srv := smallPayloadServer(t)
	nc := jstest.Connect(t, srv)
	logtest.Run(t, func(t *testing.T) statesync.Log { return openLog(t, nc) })
}

// recreatable opens a log and returns it with a function that deletes its
// stream and creates it again (as `destroy` and the next open do).
func recreatable(t *testing.T, nc *nats.Conn, open func(*testing.T, *nats.Conn) *jetstream.Log) (statesync.Log, func()) {
	l := open(t, nc)
	return l, func() {
		scope, name, _ := jetstream.ParseStreamName(l.Name())
		ctx := context.Background()
		if err := jetstream.DeleteConfig(ctx, nc, scope, name); err != nil {
			t.Fatal(err)
		}
		if _, err := jetstream.OpenLog(ctx, nc, scope, name, jetstream.LogOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLogIncarnations(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	logtest.RunIncarnations(t, func(t *testing.T) (statesync.Log, func()) { return recreatable(t, nc, openLog) })
	t.Run("ConsumerPath", func(t *testing.T) {
		logtest.RunIncarnations(t, func(t *testing.T) (statesync.Log, func()) { return recreatable(t, nc, openConsumerLog) })
	})
}

// purgeable opens a log and returns it with a function that purges its
// stream of every message, as `nats stream purge` does.
func purgeable(t *testing.T, nc *nats.Conn, open func(*testing.T, *nats.Conn) *jetstream.Log) (statesync.Log, func()) {
	l := open(t, nc)
	return l, func() {
		if err := l.Stream().Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLogEmptied(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	logtest.RunEmptied(t, func(t *testing.T) (statesync.Log, func()) { return purgeable(t, nc, openLog) })
	t.Run("ConsumerPath", func(t *testing.T) {
		logtest.RunEmptied(t, func(t *testing.T) (statesync.Log, func()) { return purgeable(t, nc, openConsumerLog) })
	})
}

// openConsumerLog opens a log on a stream created without direct gets (as a
// user may create it by hand), so that reads use an ordered consumer.
func openConsumerLog(t *testing.T, nc *nats.Conn) *jetstream.Log {
	t.Helper()
	name := fmt.Sprint("consumer", logCount.Add(1))
	js, _ := natsjs.New(nc)
	_, err := js.CreateStream(context.Background(), natsjs.StreamConfig{
		Name:        jetstream.StreamName("test", name),
		Subjects:    []string{jetstream.Subject("test", name)},
		AllowRollup: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := jetstream.OpenLog(context.Background(), nc, "test", name, jetstream.LogOptions{})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	if l.Stream().CachedInfo().Config.AllowDirect {
		t.Fatal("the stream allows direct gets")
	}
	return l
}

func TestLogConformanceConsumerPath(t *testing.T) {
	t.Parallel()
	srv := smallPayloadServer(t)
	nc := jstest.Connect(t, srv)
	logtest.Run(t, func(t *testing.T) statesync.Log { return openConsumerLog(t, nc) })
}

func entries(t *testing.T, l statesync.Log, after, upTo uint64) string {
	t.Helper()
	var b strings.Builder
	err := logtest.Read(l, context.Background(), after, upTo, func(e statesync.Entry) error {
		fmt.Fprintf(&b, "%d:%s ", e.Revision, e.Data)
		return nil
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return b.String()
}

// An append whose acknowledgement is lost is retried and applied exactly
// once, and reported as landed, not as a conflict.
func TestLostAckAppliedOnce(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	for _, expected := range []uint64{1, statesync.AnyRevision} {
		t.Run(fmt.Sprint("expected=", expected), func(t *testing.T) {
			l := openLog(t, nc)
			ctx := context.Background()
			if _, err := logtest.Append(l, ctx, 0, []byte("first")); err != nil {
				t.Fatal(err)
			}
			calls := 0
			l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
				return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
					calls++
					ack, err := publish(ctx, msg, opts...)
					if calls == 1 && err == nil {
						return nil, context.DeadlineExceeded // it landed; the ack is lost
					}
					return ack, err
				}
			})
			rev, err := logtest.Append(l, ctx, expected, []byte("second"))
			if err != nil || rev != 2 {
				t.Fatalf("Append after a lost ack = %d, %v; want 2, nil", rev, err)
			}
			if calls != 2 {
				t.Fatalf("%d publishes, want a first try and one retry", calls)
			}
			if got := entries(t, l, 0, 2); got != "1:first 2:second " {
				t.Fatalf("stream holds %q", got)
			}
			if last, _ := logtest.LastRevision(l, ctx); last != 2 {
				t.Fatalf("stream at %d, want 2: the retry must not append again", last)
			}
		})
	}
}

// An answer to an append that is no acknowledgement (digits, or nothing:
// any writer that combines answers a hand so, on the reply subject it
// names, and the append's is seen by anyone who may subscribe to the
// config's subject) is asked again with the same id, and the append's
// outcome is known: it was settled at once by a look at the entry after
// the expected one, which the server may not have stored yet, and said
// unknown.
func TestInvalidAckIsAskedAgain(t *testing.T) {
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	ctx := context.Background()
	if _, err := logtest.Append(l, ctx, 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	calls := 0
	var late sync.WaitGroup
	defer late.Wait()
	l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			if calls++; calls == 1 {
				// The forged answer came first; the message is stored
				// after the look that settled the append.
				copied := nats.NewMsg(msg.Subject)
				copied.Data = msg.Data
				for k, v := range msg.Header {
					copied.Header[k] = slices.Clone(v)
				}
				late.Go(func() {
					time.Sleep(300 * time.Millisecond)
					publish(context.Background(), copied, opts...)
				})
				return nil, natsjs.ErrInvalidJSAck
			}
			return publish(ctx, msg, opts...)
		}
	})
	rev, err := logtest.Append(l, ctx, 1, []byte("second"))
	if err != nil || rev != 2 {
		t.Fatalf("Append after an answer that was no ack = %d, %v; want 2, nil", rev, err)
	}
	late.Wait()
	if got := entries(t, l, 0, 2); got != "1:first 2:second " {
		t.Fatalf("stream holds %q", got)
	}
	if last, _ := logtest.LastRevision(l, ctx); last != 2 {
		t.Fatalf("stream at %d, want 2: the append landed twice", last)
	}
}

// A try that never reached the server is retried and lands.
func TestLostRequestRetried(t *testing.T) {
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	calls := 0
	l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			if calls++; calls == 1 {
				return nil, nats.ErrTimeout
			}
			return publish(ctx, msg, opts...)
		}
	})
	if rev, err := logtest.Append(l, context.Background(), 0, []byte("x")); err != nil || rev != 1 {
		t.Fatalf("Append = %d, %v; want 1, nil", rev, err)
	}
}

// A retried append that lost to another writer is a conflict, not a success.
func TestAmbiguousThenConflict(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	other := openOther(t, nc, l)
	calls := 0
	l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			if calls++; calls == 1 {
				if _, err := logtest.Append(other, ctx, 0, []byte("theirs")); err != nil {
					t.Error(err)
				}
				return nil, nats.ErrTimeout
			}
			return publish(ctx, msg, opts...)
		}
	})
	_, err := logtest.Append(l, context.Background(), 0, []byte("mine"))
	var conflict *statesync.ConflictError
	if !errors.As(err, &conflict) || conflict.Current != 1 {
		t.Fatalf("Append = %v; want a conflict at 1", err)
	}
}

func publishRaw(t *testing.T, nc *nats.Conn, l *jetstream.Log, msg *nats.Msg) uint64 {
	t.Helper()
	js, _ := natsjs.New(nc)
	msg.Subject = l.Stream().CachedInfo().Config.Subjects[0]
	ack, err := js.PublishMsg(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func TestForeignEntry(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	cases := map[string]func(*nats.Msg){
		"format but no kind": func(m *nats.Msg) {
			m.Header.Set(jetstream.HeaderFormat, "1")
		},
		"unknown kind": func(m *nats.Msg) {
			m.Header.Set(jetstream.HeaderFormat, "1")
			m.Header.Set(jetstream.HeaderKind, "mystery")
		},
		"future format": func(m *nats.Msg) {
			m.Header.Set(jetstream.HeaderFormat, "9")
			m.Header.Set(jetstream.HeaderKind, "update")
		},
		"bad chunk index": func(m *nats.Msg) {
			m.Header.Set(jetstream.HeaderFormat, "1")
			m.Header.Set(jetstream.HeaderKind, "snapshot-chunk")
			m.Header.Set(jetstream.HeaderChunk, "x")
		},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			l := openLog(t, nc)
			if _, err := logtest.Append(l, context.Background(), 0, []byte("ok")); err != nil {
				t.Fatal(err)
			}
			msg := nats.NewMsg("")
			msg.Data = []byte("\x00garbage")
			set(msg)
			seq := publishRaw(t, nc, l, msg)
			var seen []uint64
			err := logtest.Read(l, context.Background(), 0, seq, func(e statesync.Entry) error {
				seen = append(seen, e.Revision)
				return nil
			})
			var entryErr *statesync.EntryError
			if !errors.As(err, &entryErr) || entryErr.Revision != seq || !strings.HasPrefix(err.Error(), l.Name()+": entry ") {
				t.Fatalf("Read over a foreign entry: %v; want an EntryError for %s entry %d", err, l.Name(), seq)
			}
			if len(seen) != 1 {
				t.Fatalf("entries before the bad one: %v, want [1]", seen)
			}
		})
	}
}

// The pieces of a snapshot whose writer gave up are never read as a
// snapshot, and lose nothing.
func TestUnfinishedChunkedSnapshotIsIgnored(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx := context.Background()
	if _, err := logtest.Append(l, ctx, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // 2 of 3 chunks
		msg := nats.NewMsg("")
		msg.Data = []byte("part")
		msg.Header.Set(jetstream.HeaderFormat, "1")
		msg.Header.Set(jetstream.HeaderKind, jetstream.KindSnapshotChunk)
		msg.Header.Set(jetstream.HeaderSnapshot, "abandoned")
		msg.Header.Set(jetstream.HeaderChunk, fmt.Sprintf("%d/3", i))
		publishRaw(t, nc, l, msg)
	}
	if _, err := logtest.Append(l, ctx, 3, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, l, 0, 4); got != "1:a 4:b " {
		t.Fatalf("entries = %q, want the updates only", got)
	}
	// A reader whose last read ended inside the run also skips the rest.
	if got := entries(t, l, 2, 4); got != "4:b " {
		t.Fatalf("entries after 2 = %q", got)
	}
}

func TestNames(t *testing.T) {
	for _, bad := range []string{"", "a.b", "a b", "a*", "a>", "a/b", "é", strings.Repeat("x", 65)} {
		if err := jetstream.ValidateName("name", bad); err == nil {
			t.Errorf("ValidateName(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"example", "some_Config-1", strings.Repeat("x", 64)} {
		if err := jetstream.ValidateName("name", good); err != nil {
			t.Errorf("ValidateName(%q): %v", good, err)
		}
	}
	if a, b := jetstream.StreamName("a_b", "c"), jetstream.StreamName("a", "b_c"); a == b {
		t.Errorf("two configs share stream %s", a)
	}
	srv := jstest.Server(t)
	_, err := jetstream.OpenLog(context.Background(), jstest.Connect(t, srv), "my.scope", "x", jetstream.LogOptions{})
	if err == nil || !strings.Contains(err.Error(), "use only letters, digits") {
		t.Fatalf("OpenLog with a dotted scope: %v", err)
	}
}

func TestIncompatibleStream(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	js, _ := natsjs.New(nc)
	_, err := js.CreateStream(context.Background(), natsjs.StreamConfig{
		Name:     jetstream.StreamName("test", "limited"),
		Subjects: []string{jetstream.Subject("test", "limited")},
		MaxMsgs:  10,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = jetstream.OpenLog(context.Background(), nc, "test", "limited", jetstream.LogOptions{})
	if err == nil || !strings.Contains(err.Error(), "rollups not allowed") || !strings.Contains(err.Error(), "max messages 10") {
		t.Fatalf("OpenLog on an incompatible stream: %v", err)
	}
}

func TestServerLocksDataDir(t *testing.T) {
	dir := t.TempDir()
	jstest.ServerAt(t, dir, "127.0.0.1:0")
	_, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir})
	if !errors.Is(err, localserver.ErrDataDirLocked) {
		t.Fatalf("second server on one data dir: %v, want ErrDataDirLocked", err)
	}
}

func TestServerRefusesRemoteListen(t *testing.T) {
	_, err := localserver.StartServer(localserver.ServerOptions{Listen: "0.0.0.0:0", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("StartServer on 0.0.0.0: %v", err)
	}
}

func TestServerRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	srv := jstest.ServerAt(t, dir, "127.0.0.1:0")
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := jetstream.OpenLog(context.Background(), nc, "test", "restart", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := logtest.Append(l, context.Background(), 0, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()
	srv = jstest.ServerAt(t, dir, "127.0.0.1:0")
	nc = jstest.Connect(t, srv)
	l, err = jetstream.OpenLog(context.Background(), nc, "test", "restart", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(t, l, 0, 1); got != "1:kept " {
		t.Fatalf("after restart: %q", got)
	}
}

func TestConnectFailsFast(t *testing.T) {
	start := time.Now()
	_, err := localserver.Connect(localserver.ConnectOptions{URLs: "nats://u:hunter2@127.0.0.1:1", Timeout: time.Second})
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error shows the password: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v to fail", d)
	}
}

// Reads leave no consumers behind: the server allows 1,000 per stream.
func TestReadsLeaveNoConsumers(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	l := openConsumerLog(t, jstest.Connect(t, srv))
	ctx := context.Background()
	if _, err := logtest.Append(l, ctx, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	for range 1100 {
		if got := entries(t, l, 0, 1); got != "1:a " {
			t.Fatalf("read %q", got)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := l.Stream().Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d consumers left after the reads", info.State.Consumers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A message without sharedconfig's headers (another program published on
// the config's subject) is delivered as foreign, with why, and reading goes
// on past it.
func TestForeignEntryIsDelivered(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	if _, err := logtest.Append(l, context.Background(), 0, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg("")
	msg.Data = []byte("hello")
	seq := publishRaw(t, nc, l, msg)
	after, err := logtest.Append(l, context.Background(), seq, []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []statesync.Entry
	if err := logtest.Read(l, context.Background(), 0, after, func(e statesync.Entry) error {
		seen = append(seen, e)
		return nil
	}); err != nil {
		t.Fatalf("Read over a foreign entry: %v", err)
	}
	if len(seen) != 3 || seen[1].Revision != seq || seen[1].Foreign != "not a sharedconfig entry (no Sharedconfig-Kind header), 5 bytes" || seen[0].Foreign != "" || string(seen[2].Data) != "after" {
		t.Fatalf("entries: %+v", seen)
	}
}

// A call handed to a writer nobody listens for is one that nobody got
// (the server's no responders), which the hander may count as its own
// again (turns.ErrNotTaken); one a writer takes gets its answer.
func TestHandToNobodyIsNotTaken(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.Hand(ctx, "nobody", []byte("call")); !errors.Is(err, turns.ErrNotTaken) {
		t.Fatalf("Hand to nobody: %v; want turns.ErrNotTaken", err)
	}
	stop, err := openOther(t, nc, l).Take("somebody", func(_ []byte, _ string, answer func([]byte)) { answer([]byte("7")) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if a, err := l.Hand(ctx, "somebody", []byte("call")); err != nil || string(a) != "7" {
		t.Fatalf("Hand to somebody = %q, %v; want 7", a, err)
	}
}

// A writer answers a handed call only on an inbox: the reply subject is
// the hander's to choose, and anyone who may publish on the turns subject
// may hand, so an answer sent wherever the hand said would publish, with
// the carrier's permissions, to any subject: an empty answer (a call
// refused) on $JS.API.STREAM.DELETE.<stream> deleted that stream, another
// config's too.
func TestHandAnswersOnlyOnAnInbox(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	victim := openLog(t, nc)
	stop, err := openOther(t, nc, l).Take("carrier", func(_ []byte, _ string, answer func([]byte)) { answer(nil) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	scope, name, _ := jetstream.ParseStreamName(l.Name())
	forged := nats.NewMsg("sharedconfig." + scope + "." + name + jetstream.TurnsSuffix + ".carrier")
	forged.Reply = "$JS.API.STREAM.DELETE." + victim.Name()
	forged.Data = []byte("not a call")
	if err := nc.PublishMsg(forged); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a, err := l.Hand(ctx, "carrier", []byte("call")); err != nil || len(a) != 0 {
		t.Fatalf("a hand after the forged one: %q, %v; want an empty answer", a, err) // the forged one was taken before it
	}
	if _, err := victim.Stream().Info(ctx); err != nil {
		t.Fatalf("the stream the forged hand named as its reply subject: %v", err)
	}
}

// Nor on an inbox of another shape than a request's (nats.go's
// _INBOX.<id>.<token>): a consumer's deliver subject (_INBOX.<id>), seen by
// anyone who may subscribe to _INBOX.>, would take the answer for one of
// the consumer's messages, and fail the read it serves.
func TestHandAnswersOnlyARequestsInbox(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	stop, err := openOther(t, nc, l).Take("carrier", func(_ []byte, _ string, answer func([]byte)) { answer(nil) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	victim := jstest.Connect(t, srv)
	inbox := victim.NewInbox()
	stray, err := victim.SubscribeSync(inbox + ".>")
	if err != nil {
		t.Fatal(err)
	}
	deliver, err := victim.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	victim.Flush()
	scope, name, _ := jetstream.ParseStreamName(l.Name())
	for _, reply := range []string{inbox, inbox + ".a.b"} {
		forged := nats.NewMsg("sharedconfig." + scope + "." + name + jetstream.TurnsSuffix + ".carrier")
		forged.Reply, forged.Data = reply, []byte("not a call")
		if err := nc.PublishMsg(forged); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.Hand(ctx, "carrier", []byte("call")); err != nil {
		t.Fatal(err) // answered after the forged ones were taken
	}
	victim.Flush()
	for _, sub := range []*nats.Subscription{deliver, stray} {
		if n, _, _ := sub.Pending(); n != 0 {
			t.Errorf("%s got %d answers to forged hands", sub.Subject, n)
		}
	}
}

// A direct get's reply subject cannot be guessed: an inbox is seen by
// anyone who may subscribe to _INBOX.> (every user, in docs/operations.md),
// and any writer that combines answers a forged hand on the inbox it
// names, so messages sent ahead to the replies a read would ask for next
// (numbered one by one, they were) failed that read ("a direct get
// answered without a sequence").
func TestDirectGetRepliesCannotBeSentAhead(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx := context.Background()
	for i := range 3 {
		if _, err := logtest.Append(l, ctx, uint64(i), []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := entries(t, l, 0, 3); got == "" {
		t.Fatal("no entries read")
	}
	forger := jstest.Connect(t, srv)
	for n := range 20 {
		if err := forger.Publish(fmt.Sprintf("%s.%d", l.DirectInbox(), n), nil); err != nil {
			t.Fatal(err)
		}
	}
	forger.Flush()
	for range 5 {
		err := l.ReadAfter(ctx, statesync.Position{}, 3, func(statesync.Entry) error { return nil })
		if err != nil {
			t.Fatalf("a read after replies were sent ahead: %v", err)
		}
	}
}

// An update a little smaller than the max payload is refused for the
// headers' room, and the line says how much an update may take (it said
// "an update of 1048050 bytes is too large for the server's max payload
// (1048576 bytes)").
func TestTooLargeSaysWhatAnUpdateMayTake(t *testing.T) {
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	_, err := l.AppendAfter(context.Background(), statesync.Position{Revision: statesync.AnyRevision}, make([]byte, l.MaxUpdateSize()+1))
	want := fmt.Sprintf("an update of %d bytes is too large for the server's max payload (%d bytes, of which an update may take %d)", l.MaxUpdateSize()+1, l.MaxUpdateSize()+1024, l.MaxUpdateSize())
	if !errors.Is(err, statesync.ErrTooLarge) || err.Error() != want {
		t.Fatalf("AppendAfter of %d bytes: %v, want %s", l.MaxUpdateSize()+1, err, want)
	}
}
