package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/logtest"
)

// noDirectGets may use JetStream and the configs' subjects, but not ask
// for direct gets, on streams that serve them.
var noDirectGets = &server.Permissions{
	Publish:   &server.SubjectPermission{Allow: []string{"$JS.API.>", "sharedconfig.>"}, Deny: []string{"$JS.API.DIRECT.GET.>"}},
	Subscribe: &server.SubjectPermission{Allow: []string{"sharedconfig.>", "_INBOX.>"}},
}

// heardErrors records what a connection's error handler hears.
type heardErrors struct {
	mu   sync.Mutex
	errs []error
}

func (h *heardErrors) add(_ string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, err)
}

func (h *heardErrors) all() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errs)
}

// connectAs connects to url with an error handler of its own, as the
// command line does, which hears into heard (if not nil).
func connectAs(t *testing.T, url string, heard *heardErrors) *nats.Conn {
	t.Helper()
	o := localserver.ConnectOptions{URLs: url}
	if heard != nil {
		o.AsyncError = heard.add
	}
	nc, err := localserver.Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// openAs opens the log of test/name on nc within 10s.
func openAs(t *testing.T, nc *nats.Conn, name string) (*jetstream.Log, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := jetstream.OpenLog(ctx, nc, "test", name, jetstream.LogOptions{})
	if err == nil {
		t.Cleanup(func() { l.Close() })
	}
	return l, err
}

// A user who may not ask for direct gets, on streams that serve them,
// passes the conformance suite: reads fall back to the leader's message
// gets and consumers (on a server of 64 KiB max payload, so that large
// snapshots are chunked and compaction purges).
func TestLogConformanceWithoutDirectGetPermission(t *testing.T) {
	t.Parallel()
	url := jstest.Users(t, &server.Options{MaxPayload: 64 << 10}, map[string]*server.Permissions{"u": noDirectGets})
	nc := connectAs(t, url("u"), &heardErrors{})
	logtest.Run(t, func(t *testing.T) statesync.Log {
		l, err := openAs(t, nc, fmt.Sprint("nodirect", logCount.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		if !l.Stream().CachedInfo().Config.AllowDirect {
			t.Fatal("the stream does not serve direct gets")
		}
		return l
	})
}

// A user granted exactly the permissions docs/operations.md lists passes
// the conformance suite, with direct gets and without (they are optional).
func TestLogConformanceWithTheDocumentedPermissions(t *testing.T) {
	t.Parallel()
	documented := jstest.DocumentedPermissions(t)
	url := jstest.Users(t, &server.Options{MaxPayload: 64 << 10}, map[string]*server.Permissions{
		"doc": documented, "nodirect": jstest.WithoutDirectGets(documented),
	})
	for _, user := range []string{"doc", "nodirect"} {
		t.Run(user, func(t *testing.T) {
			nc := connectAs(t, url(user), &heardErrors{})
			logtest.Run(t, func(t *testing.T) statesync.Log {
				l, err := openAs(t, nc, fmt.Sprint(user, logCount.Add(1)))
				if err != nil {
					t.Fatal(err)
				}
				return l
			})
		})
	}
}

// quickly runs fn with a context of 5s and fails the test if it takes a
// second or more: a request the server refused is never answered, and
// waiting for it would take seconds.
func quickly(t *testing.T, what string, fn func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err := fn(ctx)
	if took := time.Since(start); err != nil || took >= time.Second {
		t.Fatalf("%s: %v, in %v; want no error, at once", what, err, took)
	}
}

// The first direct get the server refuses switches the connection to the
// leader's gets for that stream at once: no request waits for an answer
// that never comes, and no later one asks again. The error handler the
// connection had still hears the refusal, marked as handled.
func TestRefusedDirectGetsSwitchAtOnce(t *testing.T) {
	t.Parallel()
	url := jstest.Users(t, &server.Options{}, map[string]*server.Permissions{"u": noDirectGets})
	admin := connectAs(t, url("admin"), nil)
	var heard heardErrors
	nc := connectAs(t, url("u"), &heard)
	w, err := openAs(t, admin, "switch")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := logtest.Append(w, ctx, statesync.AnyRevision, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var last statesync.Position
	quickly(t, "LastEntry", func(ctx context.Context) error {
		_, _, err := jetstream.LastEntry(ctx, nc, "test", "switch")
		if errors.Is(err, nats.ErrPermissionViolation) {
			return nil // said at once
		}
		return fmt.Errorf("want a permission violation, got %v", err)
	})
	l, err := openAs(t, nc, "switch")
	if err != nil {
		t.Fatal(err)
	}
	quickly(t, "LastPosition", func(ctx context.Context) (err error) { last, err = l.LastPosition(ctx); return err })
	if last.Revision != 3 {
		t.Fatalf("LastPosition: %+v, want revision 3", last)
	}
	quickly(t, "ReadAfter", func(ctx context.Context) error {
		n := 0
		err := l.ReadAfter(ctx, statesync.Position{Revision: 1}, 3, func(statesync.Entry) error { n++; return nil })
		if err == nil && n != 2 {
			err = fmt.Errorf("read %d entries, want 2", n)
		}
		return err
	})
	other, err := openAs(t, nc, "switch")
	if err != nil {
		t.Fatal(err)
	}
	quickly(t, "a second log's ReadAfter", func(ctx context.Context) error {
		return other.ReadAfter(ctx, statesync.Position{}, 3, func(statesync.Entry) error { return nil })
	})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the handler runs on a goroutine of its own
	errs := heard.all()
	if len(errs) != 1 || !errors.Is(errs[0], nats.ErrPermissionViolation) || !errors.Is(errs[0], jetstream.ErrHandled) ||
		!strings.Contains(errs[0].Error(), `"$JS.API.DIRECT.GET.`) {
		t.Fatalf("the connection's own handler heard %v; want one refused direct get, marked handled", errs)
	}
}

// deny permits everything but pub and sub.
func deny(pub, sub []string) *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{">"}, Deny: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: sub},
	}
}

// A permission sharedconfig needs and does not have is said at once, in
// an error that names it, not after the timeout as a server that does not
// answer.
func TestMissingPermissionIsSaidAtOnce(t *testing.T) {
	t.Parallel()
	url := jstest.Users(t, &server.Options{}, map[string]*server.Permissions{
		"nowrite":   deny([]string{"sharedconfig.>"}, nil),
		"noinfo":    deny([]string{"$JS.API.STREAM.INFO.>"}, nil),
		"noinbox":   deny(nil, []string{"_INBOX.>"}),
		"nomsgget":  deny([]string{"$JS.API.STREAM.MSG.GET.>", "$JS.API.DIRECT.GET.>"}, nil),
		"noconsume": deny([]string{"$JS.API.CONSUMER.>", "$JS.API.DIRECT.GET.>"}, nil),
	})
	admin := connectAs(t, url("admin"), nil)
	w, err := openAs(t, admin, "denied")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := logtest.Append(w, ctx, statesync.AnyRevision, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, subject string
		try           func(ctx context.Context, l *jetstream.Log) error
	}{
		{"nowrite", `publish to "sharedconfig.test.denied"`, func(ctx context.Context, l *jetstream.Log) error {
			_, err := logtest.Append(l, ctx, 1, []byte("y"))
			return err
		}},
		{"noinfo", `publish to "$JS.API.STREAM.INFO.SC_4_test_denied"`, nil},
		{"noinbox", `subscribe to "_INBOX.`, nil},
		{"nomsgget", `publish to "$JS.API.STREAM.MSG.GET.SC_4_test_denied"`, func(ctx context.Context, l *jetstream.Log) error {
			_, err := l.LastPosition(ctx)
			return err
		}},
		{"noconsume", `publish to "$JS.API.CONSUMER.`, func(ctx context.Context, l *jetstream.Log) error {
			return l.ReadAfter(ctx, statesync.Position{}, 1, func(statesync.Entry) error { return nil })
		}},
	} {
		t.Run(c.user, func(t *testing.T) {
			nc := connectAs(t, url(c.user), &heardErrors{})
			start := time.Now()
			l, err := openAs(t, nc, "denied")
			if c.try != nil {
				if err != nil {
					t.Fatalf("OpenLog: %v", err)
				}
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				start = time.Now()
				err = c.try(ctx, l)
			}
			took := time.Since(start)
			var refused *jetstream.PermissionError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), c.subject) || took >= time.Second ||
				errors.Is(err, statesync.ErrUnknownOutcome) || strings.Contains(err.Error(), "leader") {
				t.Fatalf("%v, in %v; want a permission error that names %s, at once", err, took, c.subject)
			}
		})
	}
}

// A refused subscription to the connection's inboxes ends its requests at
// once, until the connection reconnects: nats.go subscribes again then,
// and once the server grants it the requests are answered again.
func TestInboxRefusalLastsUntilAReconnect(t *testing.T) {
	t.Parallel()
	users := func(p *server.Permissions) []*server.User {
		return []*server.User{{Username: "admin", Password: "p"}, {Username: "u", Password: "p", Permissions: p}}
	}
	o := &server.Options{JetStream: true, Users: users(deny(nil, []string{"_INBOX.>"}))}
	s := jstest.NATS(t, o)
	url := "nats://u:p@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	nc := connectAs(t, url, &heardErrors{})
	if _, err := openAs(t, nc, "inbox"); !errors.As(err, new(*jetstream.PermissionError)) {
		t.Fatalf("OpenLog = %v; want a permission error", err)
	}
	granted := *o
	granted.Users = users(deny(nil, nil))
	if err := s.ReloadOptions(&granted); err != nil {
		t.Fatal(err)
	}
	reconnected := make(chan struct{}, 1)
	prev := nc.ReconnectHandler()
	nc.SetReconnectHandler(func(c *nats.Conn) {
		if prev != nil {
			prev(c)
		}
		reconnected <- struct{}{}
	})
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnect")
	}
	if _, err := openAs(t, nc, "inbox"); err != nil {
		t.Fatalf("OpenLog after the reconnect: %v", err)
	}
}

// A user who may not subscribe to the config's subject is told so when a
// follow starts, not left following nothing, and once: the connection's
// handler hears the refusal as handled.
func TestRefusedFollowIsSaid(t *testing.T) {
	t.Parallel()
	url := jstest.Users(t, &server.Options{}, map[string]*server.Permissions{"nofollow": deny(nil, []string{"sharedconfig.>"})})
	heard := &heardErrors{}
	l, err := openAs(t, connectAs(t, url("nofollow"), heard), "follow")
	if err != nil {
		t.Fatal(err)
	}
	const follows = 5
	for range follows {
		stop, err := l.Notify(func() {})
		var refused *jetstream.PermissionError
		if !errors.As(err, &refused) || !refused.Subscribe || refused.Subject != "sharedconfig.test.follow" {
			if stop != nil {
				stop()
			}
			t.Fatalf("Notify = %v; want a refused subscription to the config's subject", err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(heard.all()) < follows && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	for _, err := range heard.all() {
		if !errors.Is(err, jetstream.ErrHandled) {
			t.Errorf("the connection's handler heard %v, not marked handled: the refusal Notify returned would be said twice", err)
		}
	}
	if n := len(heard.all()); n != follows {
		t.Errorf("the handler heard %d errors, want %d", n, follows)
	}
}

// A follow is refused when the server refuses its own subscription, and
// only then: not for an earlier refusal, which nats.go keeps as the
// connection's last error (of another config's subject, or of this one
// before its user was granted it), and not missed when another error
// comes after it, before the flush that follows the subscription returns.
func TestFollowRefusalIsThisSubscriptions(t *testing.T) {
	t.Parallel()
	users := func(p *server.Permissions) []*server.User {
		return []*server.User{{Username: "admin", Password: "p"}, {Username: "u", Password: "p", Permissions: p}}
	}
	o := &server.Options{JetStream: true, Users: users(deny([]string{"slow"}, []string{"sharedconfig.test.closed"}))}
	srv := jstest.NATS(t, o)
	proxy := jstest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	// The connection's own handler takes its time over a refusal of "slow",
	// holding up those after it.
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: strings.Replace(proxy.URL(), "nats://", "nats://u:p@", 1),
		AsyncError: func(_ string, err error) {
			if strings.Contains(err.Error(), `"slow"`) {
				time.Sleep(500 * time.Millisecond)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f := follower{t: t, nc: nc, admin: connectAs(t, strings.Replace(srv.ClientURL(), "nats://", "nats://admin:p@", 1), &heardErrors{})}
	f.follow("closed", true)
	f.follow("open", false) // after an unrelated refusal

	// Granted at last: the refusal of before says nothing of this one.
	granted := o.Clone()
	granted.Users = users(deny(nil, nil))
	if err := srv.ReloadOptions(granted); err != nil {
		t.Fatal(err)
	}
	f.follow("closed", false)

	// Refused again, and another error right after the refusal takes its
	// place as the last error, while the handler has yet to hear either.
	if err := srv.ReloadOptions(o); err != nil {
		t.Fatal(err)
	}
	proxy.AfterServerSays(`Subscription to "sharedconfig.test.closed"`, "-ERR 'Permissions Violation for Publish to \"elsewhere\"'\r\n")
	if err := nc.Publish("slow", nil); err != nil {
		t.Fatal(err)
	}
	f.follow("closed", true)
}

// follower follows configs of scope test on nc, and publishes on their
// subjects as admin.
type follower struct {
	t         *testing.T
	nc, admin *nats.Conn
	logs      map[string]*jetstream.Log
}

// follow starts a follow of the config name, which must be refused or
// not; one that is not must hear a message on the config's subject.
func (f *follower) follow(name string, wantRefused bool) {
	t := f.t
	t.Helper()
	if f.logs[name] == nil {
		l, err := openAs(t, f.nc, name)
		if err != nil {
			t.Fatal(err)
		}
		if f.logs == nil {
			f.logs = map[string]*jetstream.Log{}
		}
		f.logs[name] = l
	}
	heard := make(chan struct{}, 1)
	stop, err := f.logs[name].Notify(func() {
		select {
		case heard <- struct{}{}:
		default:
		}
	})
	var refused *jetstream.PermissionError
	switch {
	case wantRefused && (!errors.As(err, &refused) || !refused.Subscribe || refused.Subject != "sharedconfig.test."+name):
		t.Fatalf("Notify on %s = %v; want the refusal of its own subject", name, err)
	case wantRefused:
		return
	case err != nil:
		t.Fatalf("Notify on %s = %v; want it followed", name, err)
	}
	if err := f.admin.Publish("sharedconfig.test."+name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		t.Fatalf("the follow on %s heard nothing of a message on its subject", name)
	}
	// Gone from the server before the test goes on: a permission taken
	// away later would otherwise be refused to it too.
	stop()
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}
