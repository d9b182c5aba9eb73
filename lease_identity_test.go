package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// A lease registration has an identity: a shell whose lease expired while
// it was stopped (SIGSTOP), and which another process of the same --writer
// registered again meanwhile, says once, when it runs again, that it no
// longer holds the lease, does not call the new registration its own, and
// neither puts under it nor revokes it on QUIT.
func TestStoppedHolderLeavesTheNextRegistrationAlone(t *testing.T) {
	t.Parallel()
	args := membershipServer(t)
	a, b := reregisteredWhileStopped(t, args)
	a.send("LEASES")
	line := untilLine(t, a, "| /servers/1 ")
	if strings.Contains(line, "(this shell)") {
		t.Errorf("the stopped shell calls the new registration its own: %s", line)
	}
	a.wantExit = 1 // a command failed: the put
	a.send("PUT_WITH_LEASE /servers/1, A-again, /servers/1")
	untilLine(t, a, "!!!! line 4: Lease '/servers/1' is held by this writer under a registration another process made")
	a.send("QUIT")
	untilLine(t, a, "**** Exiting...")

	b.send("GET /servers/1")
	untilLineWithout(t, b, "**** The value of property '/servers/1' is 'B-addr'", "REVOKE_LEASE")
	b.send("LEASES")
	untilLine(t, b, "| /servers/1 | server-1 (this shell) |")
	b.send("QUIT")
	untilLine(t, b, "**** Exiting...")
}

// The same, but the process that registered the lease again is killed
// (kill -9): the shell that lost its registration does not keep the dead
// one alive, so a follower sees it expire within the ttl and 2 seconds.
func stoppedHolderDoesNotKeepTheNextRegistrationAlive(t *testing.T) {
	args := membershipServer(t)
	a, b := reregisteredWhileStopped(t, args)
	follower := startREPL(t, "follower", args("watcher", "--follow")...)
	follower.send("STATUS")
	untilLine(t, follower, "**** Follow:    on")
	b.wantExit = -1
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	const ttl = 3 * time.Second
	line := untilLineWithin(t, follower, "EXPIRE_LEASE /servers/1 -- lease /servers/1 expired, removing /servers/1", ttl+2*time.Second)
	t.Logf("the follower printed the expiry %s after the kill: %s", time.Since(killed), line)
	a.send("QUIT")
	untilLine(t, a, "**** Exiting...")
	follower.send("QUIT")
	untilLine(t, follower, "**** Exiting...")
}

// reregisteredWhileStopped: shell A (--writer server-1) registers
// /servers/1 with ttl 3s and puts A-addr under it, and is stopped; B, a
// following shell with the same --writer, sees the lease expire, registers
// it again and puts B-addr. A is then resumed, and says it lost the lease.
func reregisteredWhileStopped(t *testing.T, args func(string, ...string) []string) (a, b *repl) {
	t.Helper()
	a = startREPL(t, "A", args("server-1")...)
	a.send("REGISTER_LEASE /servers/1, 3s")
	a.expect("**** Lease '/servers/1' registered with ttl 3s, held by server-1")
	a.send("PUT_WITH_LEASE /servers/1, A-addr, /servers/1")
	a.expect("**** Property '/servers/1' added with value 'A-addr', under lease '/servers/1'")
	b = startREPL(t, "B", args("server-1", "--follow")...)
	b.send("STATUS")
	untilLine(t, b, "**** Follow:    on")

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	untilLine(t, b, "EXPIRE_LEASE /servers/1 -- lease /servers/1 expired, removing /servers/1")
	b.send("REGISTER_LEASE /servers/1, 3s")
	untilLine(t, b, "**** Lease '/servers/1' registered with ttl 3s, held by server-1")
	b.send("PUT_WITH_LEASE /servers/1, B-addr, /servers/1")
	untilLine(t, b, "**** Property '/servers/1' added with value 'B-addr', under lease '/servers/1'")

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	untilLine(t, a, "!!!! Lease '/servers/1' expired while this process was not running; it is no longer held")
	return a, b
}

// untilLineWithin waits for a line containing want, skipping others, and
// fails if none comes within d.
func untilLineWithin(t *testing.T, r *repl, want string, d time.Duration) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("%s exited", r.name)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("%s did not print %q within %s", r.name, want, d)
		}
	}
}
