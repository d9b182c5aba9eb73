package jetstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// apiRequests records the subjects of the JetStream API requests made on
// the server while fn runs (seen from a connection of their own).
func apiRequests(t *testing.T, watcher *nats.Conn, fn func()) []string {
	t.Helper()
	// A channel subscription: the connection's reader puts each message in
	// the channel before it reads the answer to a later Flush, so once
	// Flush returns every request the server saw is in the channel (an
	// asynchronous handler could still be about to run).
	msgs := make(chan *nats.Msg, 1024)
	sub, err := watcher.ChanSubscribe("$JS.API.>", msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	fn()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		select {
		case m := <-msgs:
			seen = append(seen, m.Subject)
		default:
			return seen
		}
	}
}

// Asking where the log ends (what REFRESH with nothing pending costs) is
// one get of the last message, not the stream's info, which the server
// answers through its API queue at about three times a round trip.
func TestLastRevisionIsOneMessageGet(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx := context.Background()
	for range 3 {
		if _, err := logtest.Append(l, ctx, statesync.AnyRevision, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var last uint64
	var err error
	seen := apiRequests(t, jstest.Connect(t, srv), func() { last, err = logtest.LastRevision(l, ctx) })
	if err != nil || last != 3 {
		t.Fatalf("LastRevision = %d, %v; want 3", last, err)
	}
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "$JS.API.DIRECT.GET.") {
		t.Fatalf("LastRevision made the requests %q; want one direct get", seen)
	}
}

// With no message left to ask for (the stream purged by hand) the stream's
// sequence still says where the log ends; a foreign message last is still
// the last revision.
func TestLastRevisionWithoutMessagesOrAfterAForeignOne(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	l := openLog(t, nc)
	ctx := context.Background()
	for range 3 {
		if _, err := logtest.Append(l, ctx, statesync.AnyRevision, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Stream().Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if last, err := logtest.LastRevision(l, ctx); err != nil || last != 3 {
		t.Fatalf("LastRevision after a purge of everything = %d, %v; want 3", last, err)
	}
	scope, name, _ := jetstream.ParseStreamName(l.Name())
	if _, err := nc.Request(jetstream.Subject(scope, name), []byte("not ours"), time.Second); err != nil {
		t.Fatal(err)
	}
	if last, err := logtest.LastRevision(l, ctx); err != nil || last != 4 {
		t.Fatalf("LastRevision after a foreign message = %d, %v; want 4", last, err)
	}
}

// On a replicated stream the leader answers: a revision just acknowledged
// through one server is seen at once through another, whichever replica
// is behind.
func TestLastRevisionOnR3IsTheLeaders(t *testing.T) {
	t.Parallel()
	nodes, w := clusterLog(t, "lastrev")
	ctx := context.Background()
	scope, name, _ := jetstream.ParseStreamName(w.Name())
	for _, n := range nodes {
		nc, err := localserver.Connect(localserver.ConnectOptions{URLs: n.Server.ClientURL()})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		r, err := jetstream.OpenLog(ctx, nc, scope, name, jetstream.LogOptions{Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		for range 30 {
			rev, err := logtest.Append(w, ctx, statesync.AnyRevision, []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if last, err := logtest.LastRevision(r, ctx); err != nil || last != rev {
				t.Fatalf("LastRevision through %s = %d, %v just after %d was acknowledged", n.Server.Name(), last, err, rev)
			}
		}
	}
}
