package repl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A PUT that lost its first try to another writer and then heard nothing
// from the server (it hangs, or the connection is cut and cannot come
// back) says the server did not answer, in the words a read uses, not that
// it was answering.
func TestWriteThatLostThenGotNoAnswerBlamesTheServer(t *testing.T) {
	t.Parallel()
	for _, cut := range []bool{false, true} {
		srv := jstest.Server(t)
		proxy := jstest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
		sh, out := openShellOn(t, jstest.ConnectURL(t, proxy.URL()), "alice", Options{Timeout: time.Second})
		run(sh, out, "PUT a, 1")
		putAsBob(t, srv, "a", "2") // alice's copy is behind: her next try loses
		before := proxy.Dropped()
		proxy.FreezeOn("$JS.API.DIRECT.GET.") // her catch-up goes unanswered
		done := make(chan string)
		go func() { done <- run(sh, out, "PUT a, 3") }()
		if cut {
			proxy.WaitForDrop(t, before)
			proxy.Cut() // and the connection goes, and cannot come back
		}
		got := <-done
		proxy.Thaw()
		const want = "!!!! Error: no answer from the server within 1s; is it running? ("
		if !strings.HasPrefix(got, want) || strings.Contains(got, "answering") {
			t.Errorf("cut %v: the PUT said %q; want a line starting %q", cut, got, want)
		}
	}
}

// putAsBob puts key on srv's test/cfg as another process would.
func putAsBob(t *testing.T, srv *localserver.Server, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := jetstream.OpenLog(ctx, jstest.Connect(t, srv), "test", "cfg", jetstream.LogOptions{Writer: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := sharedconfig.Open(ctx, log, sharedconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if _, err := bob.Put(ctx, key, value); err != nil {
		t.Fatal(err)
	}
}
