package main

import (
	"context"
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
