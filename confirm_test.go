//go:build linux

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// On a terminal, destroy asks, and only a yes deletes.
func TestDestroyAsksOnTerminal(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "-s", "asked"}
	if _, stderr, code := runShell(t, "PUT k, v\n", args...); code != 0 {
		t.Fatalf("PUT: exit %d, %s", code, stderr)
	}
	for _, answer := range []struct{ keys, want string }{
		{"\r", "**** Not destroyed"},
		{"no\r", "**** Not destroyed"},
		{"\x03", "**** Not destroyed"}, // Ctrl-C: a no at once, not a wait for Enter
		{"y\r", "**** Destroyed asked/someConfig (stream SC_5_asked_someConfig: 2 entries, last revision 2)"},
	} {
		p := startPTY(t, append(args, "destroy")...)
		p.waitFor("? This cannot be undone. [y/N] ", 1)
		p.typeKeys(answer.keys)
		p.waitFor(answer.want, 1)
		if code := p.wait(); code != 0 {
			t.Fatalf("answering %q: exit %d", answer.keys, code)
		}
	}
	if _, stderr, code := runShell(t, "", append(args, "destroy", "--yes")...); code != 1 {
		t.Fatalf("a second destroy: exit %d, %s; want 1 (no such config)", code, stderr)
	}
}

// On a terminal, repair shows what it discards and asks; an entry that
// lands while it waits for the answer is not discarded unseen: the repair
// writes nothing and says to look again.
func TestRepairAsksAndWritesNothingWhenTheLogMovedMeanwhile(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "-s", "mended"}
	if _, stderr, code := runShell(t, "PUT k, v\n", args...); code != 0 {
		t.Fatalf("PUT: exit %d, %s", code, stderr)
	}
	publish := func(body string) uint64 {
		js, err := natsjs.New(jstest.Connect(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(jetstream.Subject("mended", "someConfig"))
		msg.Data = []byte(body)
		msg.Header.Set(jetstream.HeaderFormat, "1")
		msg.Header.Set(jetstream.HeaderKind, "update")
		ack, err := js.PublishMsg(context.Background(), msg)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	damage := publish("garbage")
	p := startPTY(t, append(args, "repair")...)
	p.waitFor(fmt.Sprintf("as a snapshot after revision %d, discarding these entries:", damage), 1)
	p.waitFor("Repair? [y/N] ", 1)
	late := publish(`{"ops":[{"op":"put","key":"k","value":"late"}]}`)
	p.typeKeys("y\r")
	p.waitFor(fmt.Sprintf("ends at revision %d, not %d; nothing was written (someone wrote to the stream): run repair again", late, damage), 1)
	if code := p.wait(); code != 1 {
		t.Fatalf("the refused repair: exit %d, want 1", code)
	}
	stdout, stderr, code := runShell(t, "", append(args, "repair", "--yes")...)
	if want := fmt.Sprintf("entries %d to %d are discarded", damage, late); code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("repair --yes: exit %d, %s%s; want %q", code, stdout, stderr, want)
	}
}

// A repair agreed to on a terminal after the config was destroyed and
// created again while it asked, up to the same revision and damaged at the
// same entry, writes nothing into the new config.
func TestRepairWritesNothingIntoAConfigCreatedAgainMeanwhile(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "-s", "again"}
	damaged := func() uint64 {
		if _, stderr, code := runShell(t, "PUT k, v\n", args...); code != 0 {
			t.Fatalf("PUT: exit %d, %s", code, stderr)
		}
		js, err := natsjs.New(jstest.Connect(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(jetstream.Subject("again", "someConfig"))
		msg.Data = []byte("garbage")
		msg.Header.Set(jetstream.HeaderFormat, "1")
		msg.Header.Set(jetstream.HeaderKind, "update")
		ack, err := js.PublishMsg(context.Background(), msg)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	damage := damaged()
	p := startPTY(t, append(args, "repair")...)
	p.waitFor("Repair? [y/N] ", 1)
	if _, stderr, code := runShell(t, "", append(args, "destroy", "--yes")...); code != 0 {
		t.Fatalf("destroy: exit %d, %s", code, stderr)
	}
	if again := damaged(); again != damage {
		t.Fatalf("created again up to revision %d, want %d", again, damage)
	}
	p.typeKeys("y\r")
	p.waitFor("nothing was written (the config was destroyed and created again): run repair again", 1)
	if code := p.wait(); code != 1 {
		t.Fatalf("the refused repair: exit %d, want 1", code)
	}
	stdout, stderr, code := runShell(t, "", append(args, "repair", "--yes", "-o", "json")...)
	if want := fmt.Sprintf(`"revision":%d`, damage); code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, `"snapshot_revision":4`) {
		t.Fatalf("repair --yes of the config created again: exit %d, %s%s; want it to find the stream at %d, untouched", code, stdout, stderr, damage)
	}
}
