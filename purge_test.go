package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// A stream purged by hand under three open shells: each says so once, as
// it says a config destroyed and created again, whether it meets the purge
// itself (the first to read it, which then writes the config afresh), or
// reads the config started again since (a REFRESH, or following), and
// none says it again.
func TestPurgeSaidByEveryProcess(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "purged", "--no-cache"}
	a, b, c := startREPL(t, "a", args...), startREPL(t, "b", args...), startREPL(t, "c", args...)
	a.wantExit, b.wantExit = 1, 1 // the command that meets the purge fails
	a.send("PUT k, 1")            // the initial state at 1, k at 2
	a.expect("**** Property 'k' added with value '1'")
	b.send("REFRESH")
	b.expect("**** Properties refreshed")
	c.send("REFRESH")
	c.expect("**** Properties refreshed")
	c.send("FOLLOW ON")
	c.expect("**** Follow is on")

	log, err := jetstream.OpenLog(context.Background(), jstest.Connect(t, srv), "purged", "someConfig", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if err := log.Stream().Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.send("REFRESH")
	a.expect("!!!! line 2: someConfig was purged by hand up to revision 2: what it held is gone, and it is empty now")
	a.send("PUT z, 9") // an empty state at 3, z at 4
	a.expect("**** Property 'z' added with value '9'")
	b.send("REFRESH")
	b.expect("!!!! line 2: someConfig was purged by hand up to revision 2, and started again at 3: what it held is gone; reloaded")
	// The follower reads the purge at its next poll, or the config started
	// again when A's entries land; either way, once.
	untilLine(t, c, "someConfig was purged by hand up to revision 2")
	for _, r := range []*repl{a, b, c} {
		r.send("REFRESH")
		r.send("GET_ALL")
		untilLineWithout(t, r, "| z ", "purged")
	}
}

// With -o json, each line gives the revision the shell's copy stands at:
// after a purge, the revision it was purged up to, where the copy stands
// with no state; after the config is destroyed under it, none, and the
// field is left out.
func TestJSONRevisionAfterPurgeAndDestroy(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	a := startREPL(t, "a", "--server", srv.ClientURL(), "--scope", "jsonrev", "--no-cache", "-o", "json")
	a.wantExit = 1 // the commands that meet the purge and the destroy fail
	a.send("PUT k, 1")
	a.expect(`{"command":"PUT","ok":true,"result":{"existed":false,"key":"k","value":"1"},"revision":2}`)

	nc := jstest.Connect(t, srv)
	log, err := jetstream.OpenLog(context.Background(), nc, "jsonrev", "someConfig", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if err := log.Stream().Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.send("REFRESH")
	a.expect(`{"command":"REFRESH","ok":false,"error":"someConfig was purged by hand up to revision 2: what it held is gone, and it is empty now","line":2,"revision":2}`)
	a.send("GET k")
	a.expect(`{"command":"GET","ok":true,"result":{"found":false,"key":"k"},"revision":2}`)
	if err := jetstream.DeleteConfig(context.Background(), nc, "jsonrev", "someConfig"); err != nil {
		t.Fatal(err)
	}
	a.send("REFRESH")
	a.expect(`{"command":"REFRESH","ok":false,"error":"someConfig was destroyed (by another process); QUIT, or PUT to create it again","line":4}`)
}

// A stream purged by hand while a shell holds a lease: the lease keeper's
// refresh, appended with no condition, lands after the purge, and holds no
// state of its own, so the config still reads as empty (not as unknown,
// which only a repair would mend), and the holder says that its lease went
// with the purge.
func TestPurgeWhileALeaseIsHeld(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "leased", "--no-cache"}
	a := startREPL(t, "a", args...)
	a.send("REGISTER_LEASE L, 1s")
	a.expectPrefix("**** Lease 'L' registered with ttl 1s")
	a.send("PUT_WITH_LEASE k, v, L")
	a.expect("**** Property 'k' added with value 'v', under lease 'L'")

	log, err := jetstream.OpenLog(context.Background(), jstest.Connect(t, srv), "leased", "someConfig", jetstream.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	before, err := log.Stream().Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Stream().Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	untilLine(t, a, "Lease 'L' has ended: its config was purged by hand")
	after, err := log.Stream().Info(context.Background())
	if err != nil || after.State.Msgs == 0 || after.State.LastSeq <= before.State.LastSeq {
		t.Fatalf("the stream after the purge: %+v, %v; want the refresh landed after it", after.State, err)
	}
	stdout, stderr, code := runShell(t, "", append(args, "get-all")...)
	if code != 0 || strings.Contains(stdout, "| k ") || !strings.Contains(stderr, "was purged by hand") || strings.Contains(stderr, "unknown") {
		t.Errorf("get-all: exit status %d, stdout %q, stderr %q; want 0, empty, saying it was purged", code, stdout, stderr)
	}
	a.send("PUT x, 1")
	a.expect("**** Property 'x' added with value '1'")
}
