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

// stateOf is the sequence where perm/someConfig's stream ends and how many
// messages it holds.
func stateOf(t *testing.T, nc *nats.Conn) (last, msgs uint64) {
	t.Helper()
	js, _ := natsjs.New(nc)
	stream, err := js.Stream(context.Background(), jetstream.StreamName("perm", "someConfig"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq, info.State.Msgs
}

// purgedLine is what a process says, once, when it opens perm/someConfig
// purged by hand up to revision 3.
const purgedLine = "!!!! perm/someConfig was purged by hand up to revision 3 (its entries removed, with no snapshot in their place): what it held before is gone\n"

// readsWriteNothing runs every command that only reads, as a user who may
// write and as one who may not: each answers at once, as of an empty
// config, says (on stderr) nothing but said, and the stream is left as it
// was.
func readsWriteNothing(t *testing.T, e *permsEnv, nc *nats.Conn, said string) {
	t.Helper()
	last, msgs := stateOf(t, nc)
	for _, user := range []string{"reader", "admin"} {
		for _, args := range [][]string{{"get-all"}, {"keys"}, {"export"}} {
			if code, _, stderr, took := e.run(user, "", args...); code != 0 || stderr != said || took > 2*time.Second {
				t.Errorf("%s %q: exit status %d in %v, stderr %q; want 0 at once, saying %q", user, args, code, took, stderr, said)
			}
		}
		if code, _, stderr, took := e.run(user, "", "get", "a"); code != 1 || stderr != said+"!!!! Property 'a' is undefined\n" || took > 2*time.Second {
			t.Errorf("%s: get a: exit status %d in %v, %q; want 1 at once (no such key), saying %q first", user, code, took, stderr, said)
		}
	}
	if l, m := stateOf(t, nc); l != last || m != msgs {
		t.Fatalf("the reads moved the stream from %d (%d messages) to %d (%d)", last, msgs, l, m)
	}
}

// A config whose stream holds no state, whether never written or purged
// by hand, reads as empty for everyone, at once and without a write (each
// process says once that it was purged, if it was); a PUT then creates its
// state after the stream's last sequence.
func TestConfigWithNoStateReadsEmpty(t *testing.T) {
	e := newPermsEnv(t, &server.Options{}, map[string]*server.Permissions{
		"reader": {Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"sharedconfig.perm.someConfig"}}, Subscribe: &server.SubjectPermission{Allow: []string{">"}}},
	})
	nc, err := nats.Connect(e.url("admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	log, err := jetstream.OpenLog(ctx, nc, "perm", "someConfig", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("NeverWritten", func(t *testing.T) { e.t = t; readsWriteNothing(t, e, nc, "") })
	e.t = t
	e.quick("admin", "", "put", "a", "1")
	e.quick("reader", "", "get", "a") // a copy in the reader's cache
	e.quick("admin", "", "put", "b", "2")
	if err := log.Stream().Purge(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("Purged", func(t *testing.T) {
		e.t = t
		readsWriteNothing(t, e, nc, purgedLine)
		if out := e.quick("admin", "", "-o", "json", "list"); !strings.Contains(out, `"properties":0`) || !strings.Contains(out, `purged by hand`) {
			t.Errorf("list: %q; want the config with 0 properties, said to be purged", out)
		}
		if code, out, stderr, _ := e.run("admin", "", "repair"); code != 0 || !strings.Contains(out, "nothing to repair") || stderr != purgedLine {
			t.Errorf("repair: exit status %d, %q, stderr %q; want nothing to repair, saying it was purged", code, out, stderr)
		}
	})
	e.t = t
	if code, _, stderr, _ := e.run("admin", "", "put", "a", "3"); code != 0 || stderr != purgedLine {
		t.Errorf("put on the purged config: exit status %d, stderr %q; want 0, saying it was purged", code, stderr)
	}
	if out := e.quick("reader", "", "get-all"); !strings.Contains(out, "a") || !strings.Contains(out, "3") || strings.Contains(out, "b") {
		t.Errorf("get-all after a put on the purged config: %q; want a = 3 alone", out)
	}
	if last, msgs := stateOf(t, nc); last != 5 || msgs != 2 {
		t.Errorf("the stream ends at %d with %d messages; want the initial state at 4 and the put at 5", last, msgs)
	}
}
