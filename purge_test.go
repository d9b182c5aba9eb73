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
