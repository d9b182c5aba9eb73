package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

func apiError(code int, errCode natsjs.ErrorCode, desc string) error {
	return fmt.Errorf("nats: %w", &natsjs.APIError{Code: code, ErrorCode: errCode, Description: desc})
}

var (
	errInProcess = apiError(409, 10158, "duplicate message id is in process")
	errNoRoom    = apiError(503, 10023, "insufficient resources")
	errOther     = apiError(500, 10999, "something else went wrong")
)

// try is what one publish try does: store the message or not, then answer
// with err (nil: the real answer).
type try struct {
	store bool
	err   error
}

// scriptPublish makes the log's publish follow tries, then publish for real.
// It returns the count of tries.
func scriptPublish(l *jetstream.Log, tries ...try) *int {
	calls := new(int)
	l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			n := *calls
			*calls++
			if n >= len(tries) {
				return publish(ctx, msg, opts...)
			}
			var ack *natsjs.PubAck
			var err error
			if tries[n].store {
				ack, err = publish(ctx, msg, opts...)
			}
			if tries[n].err != nil {
				return nil, tries[n].err
			}
			return ack, err
		}
	})
	return calls
}

// After a try that may have landed, every outcome is the truth: landed,
// a conflict, or ErrUnknownOutcome; never a plain failure of a write that
// was made (Issue 11: a PUT reported failed with 10158 had been written).
func TestAmbiguousPublishOutcomes(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	lost := try{store: true, err: context.DeadlineExceeded} // landed, answer lost
	cases := []struct {
		name     string
		expected uint64
		tries    []try
		other    bool // another writer appends during the first try
		want     string
	}{
		{"in process, then duplicate", 1, []try{lost, {err: errInProcess}, {err: errInProcess}}, false, "landed"},
		{"in process until the deadline", 1, []try{lost, {err: errInProcess}, {err: errInProcess}, {err: errInProcess}, {err: errInProcess}, {err: errInProcess}, {err: errInProcess}, {err: errInProcess}, {err: errInProcess}}, false, "landed"},
		{"timeouts until the deadline", 1, []try{lost, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}, {err: nats.ErrTimeout}}, false, "landed"},
		{"another error", 1, []try{lost, {err: errOther}}, false, "landed"},
		{"out of storage", 1, []try{lost, {err: errNoRoom}}, false, "landed"},
		{"a lost try, then another error", 1, []try{{err: context.DeadlineExceeded}, {err: errOther}}, false, "unknown"},
		{"a lost try, another writer, then another error", 1, []try{{err: nats.ErrTimeout}, {err: errOther}}, true, "conflict"},
		{"unconditional, then another error", statesync.AnyRevision, []try{lost, {err: errOther}}, false, "unknown"},
		{"first answer in process", 1, []try{{err: errInProcess}}, false, "landed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := openLog(t, nc)
			if _, err := logtest.Append(l, context.Background(), 0, []byte("first")); err != nil {
				t.Fatal(err)
			}
			if c.other {
				other := openOther(t, nc, l)
				if _, err := logtest.Append(other, context.Background(), 1, []byte("theirs")); err != nil {
					t.Fatal(err)
				}
			}
			scriptPublish(l, c.tries...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			rev, err := logtest.Append(l, ctx, c.expected, []byte("second"))
			var conflict *statesync.ConflictError
			switch {
			case c.want == "landed" && (err != nil || rev != 2):
				t.Fatalf("Append = %d, %v; want 2, nil", rev, err)
			case c.want == "unknown" && !errors.Is(err, statesync.ErrUnknownOutcome):
				t.Fatalf("Append = %d, %v; want an unknown outcome", rev, err)
			case c.want == "conflict" && !errors.As(err, &conflict):
				t.Fatalf("Append = %d, %v; want a conflict", rev, err)
			}
			want := uint64(2) // one entry after the first: ours or theirs
			if c.want == "unknown" && c.expected != statesync.AnyRevision {
				want = 1 // ours never landed
			}
			if last, _ := logtest.LastRevision(l, context.Background()); last != want {
				t.Fatalf("stream at %d, want %d", last, want)
			}
		})
	}
}

// A try the server answered, with nothing before it that may have landed,
// is a plain failure at once.
func TestDefinitePublishFailures(t *testing.T) {
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	calls := scriptPublish(l, try{err: errNoRoom}, try{err: errOther})
	_, err := logtest.Append(l, context.Background(), 0, []byte("x"))
	if !errors.Is(err, jetstream.ErrOutOfStorage) || *calls != 1 {
		t.Fatalf("Append on a full store = %v after %d tries; want ErrOutOfStorage after 1", err, *calls)
	}
	_, err = logtest.Append(l, context.Background(), 0, []byte("x"))
	if err == nil || errors.Is(err, statesync.ErrUnknownOutcome) || *calls != 2 {
		t.Fatalf("Append = %v after %d tries; want a plain error after 1 more", err, *calls)
	}
}

// A chunked snapshot that stops before its last chunk is certainly not made;
// one whose last chunk's answer is lost is.
func TestChunkedCompactionInterrupted(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	big := []byte(strings.Repeat("s", int(nc.MaxPayload())*2)) // 3 chunks
	t.Run("middle chunk lost", func(t *testing.T) {
		l := openLog(t, nc)
		if _, err := logtest.Append(l, context.Background(), 0, []byte("a")); err != nil {
			t.Fatal(err)
		}
		scriptPublish(l, try{store: true}, try{err: errOther})
		_, err := logtest.Compact(l, context.Background(), 1, big)
		if err == nil || errors.Is(err, statesync.ErrUnknownOutcome) || !strings.Contains(err.Error(), "compaction was not done") {
			t.Fatalf("Compact = %v; want: not done", err)
		}
		if got := entries(t, l, 0, 1); got != "1:a " {
			t.Fatalf("entries = %q", got)
		}
	})
	t.Run("middle chunk's outcome unknown", func(t *testing.T) {
		l := openLog(t, nc)
		if _, err := logtest.Append(l, context.Background(), 0, []byte("a")); err != nil {
			t.Fatal(err)
		}
		scriptPublish(l, try{store: true}, try{err: nats.ErrTimeout}, try{err: errOther})
		_, err := logtest.Compact(l, context.Background(), 1, big)
		if err == nil || errors.Is(err, statesync.ErrUnknownOutcome) || !strings.Contains(err.Error(), "compaction was not done") {
			t.Fatalf("Compact = %v; want: not done (known, since the last chunk was never sent)", err)
		}
	})
	t.Run("last chunk's answer lost", func(t *testing.T) {
		l := openLog(t, nc)
		if _, err := logtest.Append(l, context.Background(), 0, []byte("a")); err != nil {
			t.Fatal(err)
		}
		scriptPublish(l, try{store: true}, try{store: true}, try{store: true, err: nats.ErrTimeout}, try{err: errOther})
		rev, err := logtest.Compact(l, context.Background(), 1, big)
		if err != nil || rev != 4 {
			t.Fatalf("Compact = %d, %v; want 4, nil", rev, err)
		}
	})
	t.Run("purge after the chunks", func(t *testing.T) { chunkedPurgeFails(t, nc, big) })
	t.Run("another writer between chunks", func(t *testing.T) { chunkedRunInterrupted(t, nc, big) })
}

// chunkedPurgeFails: a purge whose answer is lost is asked again; a purge
// refused leaves a snapshot that is whole and used: the compaction
// succeeds, and the failed purge is a warning.
func chunkedPurgeFails(t *testing.T, nc *nats.Conn, big []byte) {
	var warnings []string
	l, err := jetstream.OpenLog(context.Background(), nc, "test", fmt.Sprint("log", logCount.Add(1)), jetstream.LogOptions{
		Warning: func(msg string) { warnings = append(warnings, msg) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := logtest.Append(l, context.Background(), 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	fail := []error{nats.ErrTimeout, errOther}
	purges := 0
	l.WrapPurge(func(purge jetstream.PurgeFunc) jetstream.PurgeFunc {
		return func(ctx context.Context, opts ...natsjs.StreamPurgeOpt) error {
			purges++
			err := purge(ctx, opts...)
			if len(fail) > 0 {
				err, fail = fail[0], fail[1:]
			}
			return err
		}
	})
	rev, err := logtest.Compact(l, context.Background(), 1, big)
	if err != nil || rev != 4 {
		t.Fatalf("Compact = %d, %v; want 4, nil: the snapshot landed whole", rev, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "the snapshot was written at 4 and is in use") {
		t.Fatalf("warnings %q; want one saying the snapshot is in use and the purge failed", warnings)
	}
	if purges != 2 {
		t.Fatalf("%d purges, want 2: the lost answer asked again, the refusal not", purges)
	}
	got := readAll(t, l, 0, 4)
	if len(got) != 1 || !got[0].Snapshot || got[0].Revision != 4 {
		t.Fatalf("read after the compaction: %v", got)
	}
	rev, err = logtest.Compact(l, context.Background(), 4, []byte("small"))
	if err != nil || rev != 5 {
		t.Fatalf("the next compaction = %d, %v", rev, err)
	}
}

// chunkedRunInterrupted: another writer appends between two chunks, so the
// run is voided and the compaction is a conflict.
func chunkedRunInterrupted(t *testing.T, nc *nats.Conn, big []byte) {
	l := openLog(t, nc)
	if _, err := logtest.Append(l, context.Background(), 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	other := openOther(t, nc, l)
	calls := 0
	l.WrapPublish(func(publish jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			if calls++; calls == 2 {
				if _, err := logtest.Append(other, ctx, 2, []byte("theirs")); err != nil {
					t.Error(err)
				}
			}
			return publish(ctx, msg, opts...)
		}
	})
	_, err := logtest.Compact(l, context.Background(), 1, big)
	var conflict *statesync.ConflictError
	if !errors.As(err, &conflict) || conflict.Current != 3 {
		t.Fatalf("Compact = %v; want a conflict, at 3", err)
	}
}

// A write whose context has ended before it starts sends nothing: a plain
// error, not "may or may not".
func TestPublishAfterContextEnded(t *testing.T) {
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := logtest.Append(l, ctx, 0, []byte("x"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, statesync.ErrUnknownOutcome) {
		t.Fatalf("Append with an ended context = %v; want context.Canceled, known not written", err)
	}
}

func readAll(t *testing.T, l statesync.Log, after, upTo uint64) []statesync.Entry {
	t.Helper()
	var got []statesync.Entry
	if err := logtest.Read(l, context.Background(), after, upTo, func(e statesync.Entry) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return got
}

// A write made while the connection is down is refused at once, unsent, and
// does not land when the server comes back (on the same port and store):
// nothing is buffered behind the caller's back.
func TestNoWriteWhileDisconnected(t *testing.T) {
	dir, listen := t.TempDir(), freeAddr(t)
	srv := jstest.ServerAt(t, dir, listen)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	last, err := logtest.Append(l, context.Background(), 0, []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	waitUntil(t, "the client to see the server gone", func() bool { return !nc.IsConnected() })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err = logtest.Append(l, ctx, last, []byte("late"))
	took := time.Since(start)
	if err == nil || errors.Is(err, statesync.ErrUnknownOutcome) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Append while disconnected = %v; want a refusal that says nothing was changed", err)
	}
	if took > time.Second {
		t.Errorf("Append while disconnected took %s; want it refused at once", took)
	}

	jstest.ServerAt(t, dir, listen)
	waitUntil(t, "the client to reconnect", nc.IsConnected)
	time.Sleep(500 * time.Millisecond) // time for a buffered write to land
	after, err := logtest.LastRevision(l, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after != last {
		t.Fatalf("the stream is at %d after the server came back, want %d: the refused write landed", after, last)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An append whose tries time out says so in words, once: not Go's
// "context deadline exceeded".
func TestUnknownOutcomeSaysTheTimeoutOnce(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	if _, err := logtest.Append(l, context.Background(), 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	tries := make([]try, 40)
	for i := range tries {
		tries[i] = try{err: context.DeadlineExceeded}
	}
	scriptPublish(l, tries...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := logtest.Append(l, ctx, 1, []byte("second"))
	if !errors.Is(err, statesync.ErrUnknownOutcome) || strings.Contains(err.Error(), "deadline exceeded") ||
		strings.Count(err.Error(), "did not answer in time") != 1 {
		t.Fatalf("Append = %v; want an unknown outcome that says the server did not answer in time, once and in words", err)
	}
}

// An append whose time ran out before it was sent (on the reads before it)
// says so in words, and that nothing was changed.
func TestAppendPastItsTimeSaysNothingWasSent(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := logtest.Append(l, ctx, 0, []byte("first"))
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline exceeded") ||
		!strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Append = %v; want one that says in words that time ran out and nothing was changed", err)
	}
}

// A read whose time runs out says so in words, and where it stood.
func TestReadPastItsTimeSaysSoInWords(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	l := openLog(t, jstest.Connect(t, srv))
	if _, err := logtest.Append(l, context.Background(), 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	err := l.ReadAfter(ctx, statesync.Position{}, 1, func(statesync.Entry) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline exceeded") ||
		!strings.Contains(err.Error(), "reading after 0") {
		t.Fatalf("ReadAfter = %v; want one that says in words where time ran out", err)
	}
}

// An append whose outcome is looked for after the stream was deleted says
// the config was deleted, not that the server has no JetStream.
func TestAppendIntoADeletedStreamSaysSo(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	if _, err := logtest.Append(l, context.Background(), 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	js, _ := natsjs.New(jstest.Connect(t, srv))
	deleted := false
	l.WrapPublish(func(jetstream.PublishFunc) jetstream.PublishFunc {
		return func(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error) {
			if !deleted { // another process destroys the config while the append is in flight
				deleted = true
				if err := js.DeleteStream(ctx, l.Name()); err != nil {
					t.Error(err)
				}
			}
			return nil, context.DeadlineExceeded
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := logtest.Append(l, ctx, 1, []byte("second"))
	if !errors.Is(err, statesync.ErrDeleted) || strings.Contains(err.Error(), "JetStream") {
		t.Fatalf("Append = %v; want one that says the config was deleted", err)
	}
}
