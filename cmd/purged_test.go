package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// purgedEnv is a server with perm/someConfig on it, and a connection to
// purge its stream as an operator would.
func purgedEnv(t *testing.T) (*permsEnv, natsjs.Stream) {
	t.Helper()
	e := newPermsEnv(t, &server.Options{}, nil)
	nc, err := nats.Connect(e.url("admin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	log, err := jetstream.OpenLog(context.Background(), nc, "perm", "someConfig", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return e, log.Stream()
}

// failsPurged runs args and fails the test unless it exits 1 at once with one
// line on stderr that says the config was purged, what is unknown, and
// what to do; it returns that line.
func (e *permsEnv) failsPurged(stdin string, args ...string) string {
	e.t.Helper()
	code, stdout, stderr, took := e.run("admin", stdin, args...)
	if code != 1 || took > 2*time.Second || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "purged by hand up to revision 3") || !strings.Contains(stderr, "its state is unknown") || !strings.Contains(stderr, "sharedconfig repair") {
		e.t.Fatalf("%q: exit status %d in %v, stdout %q, stderr %q; want 1 at once, with one line saying it was purged, its state unknown, and to repair", args, code, took, stdout, stderr)
	}
	return stdout
}

// A purge that keeps the newest entries, the first of them an update,
// leaves the config's state unknown: every command says so in one line and
// exits 1 at once, claims no state and writes nothing, with a cached copy
// at the entry the purge kept last too (it read what no one else can);
// a shell opens, says it once, and refuses reads and writes; repair then
// keeps what the entries left set.
func TestPartialPurgeLeavesStateUnknown(t *testing.T) {
	e, stream := purgedEnv(t)
	e.quick("admin", "", "put", "a", "1") // the initial state at 1, a at 2
	for _, kv := range [][]string{{"b", "2"}, {"c", "3"}, {"d", "4"}} {
		e.quick("admin", "", "put", kv[0], kv[1])
	}
	e.quick("admin", "", "get-all") // a copy in the cache, at 5, which the purge keeps
	if err := stream.Purge(context.Background(), natsjs.WithPurgeKeep(2)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get", "a"}, {"get-all"}, {"keys"}, {"export"}, {"history", "c"}, {"put", "e", "5"}, {"remove", "c"}} {
		if out := e.failsPurged("", args...); out != "" {
			t.Errorf("%q printed %q on stdout; want nothing", args, out)
		}
	}
	if code, out, _, _ := e.run("admin", "", "-o", "json", "get", "a"); code != 1 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"ok":false`) || !strings.Contains(out, "purged by hand") {
		t.Errorf("get -o json: exit status %d, %q; want 1, and one JSON line saying it was purged", code, out)
	}
	code, stdout, stderr, _ := e.run("admin", "GET c\nPUT e, 5\nLOG\n")
	if code != 1 || stdout == "" || strings.Count(stderr, "purged by hand up to revision 3") != 3 || strings.Contains(stdout, "'c' is") {
		t.Errorf("a shell: exit status %d, stdout %q, stderr %q; want the open, GET and PUT to say it was purged, and LOG to answer", code, stdout, stderr)
	}
	if info, err := stream.Info(context.Background()); err != nil || info.State.LastSeq != 5 || info.State.Msgs != 2 {
		t.Fatalf("the stream after the commands: %+v, %v; want it untouched (entries 4 and 5)", info.State, err)
	}
	if out := e.quick("admin", "", "repair", "--yes"); !strings.Contains(out, "the entries after revision 3 set (2 properties)") {
		t.Errorf("repair: %q; want it to keep what entries 4 and 5 set", out)
	}
	if out := e.quick("admin", "", "-o", "json", "get-all"); !strings.Contains(out, `"key":"c","revision":4,"value":"3"`) || !strings.Contains(out, `"key":"d"`) || strings.Contains(out, `"key":"a"`) {
		t.Errorf("get-all after repair: %q; want c and d, set at 4 and 5", out)
	}
	e.quick("admin", "", "put", "e", "5")
}
