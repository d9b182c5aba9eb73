package main

import (
	"syscall"
	"testing"
	"time"
)

// The seed's group membership example with real processes: two servers
// register /servers/1 and /servers/2 under leases of their own, a third
// process follows. The first is killed with kill -9 (no clean exit, no
// revoke): the follower's shell writes the expiry by itself, and prints
// it, within the ttl and 2 seconds; a shell started afterwards never sees
// /servers/1.
func membershipLeaseExpiresAfterKill(t *testing.T) {
	args := membershipServer(t)
	const ttl = 3 * time.Second
	follower := startREPL(t, "follower", args("watcher", "--follow")...)
	follower.send("STATUS")
	untilLine(t, follower, "**** Follow:    on")
	s1, s2 := startREPL(t, "server-1", args("server-1")...), startREPL(t, "server-2", args("server-2")...)
	for i, s := range []*repl{s1, s2} {
		n := string(rune('1' + i))
		s.send("REGISTER_LEASE /servers/" + n + ", 3s")
		s.expect("**** Lease '/servers/" + n + "' registered with ttl 3s, held by server-" + n)
		s.send("PUT_WITH_LEASE /servers/" + n + ` , "{address:192.168.199.1` + n + `, port:8000}" , /servers/` + n)
		s.expect("**** Property '/servers/" + n + "' added with value '{address:192.168.199.1" + n + ", port:8000}', under lease '/servers/" + n + "'")
	}
	untilLine(t, follower, "PUT_WITH_LEASE /servers/2")

	// Let more than the ttl pass (the scenario, not a wait for something):
	// the holders keep their leases alive by themselves.
	time.Sleep(ttl + time.Second)
	follower.send("GET_ALL /servers/")
	untilLine(t, follower, "| /servers/1 |")

	s1.wantExit = -1
	if err := s1.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	killed := time.Now()
	line := untilLine(t, follower, "EXPIRE_LEASE /servers/1 -- lease /servers/1 expired, removing /servers/1")
	if took := time.Since(killed); took > ttl+2*time.Second {
		t.Errorf("the follower printed the expiry %s after the kill, more than the ttl (%s) and 2s: %s", took, ttl, line)
	}
	t.Logf("the follower printed the expiry %s after the kill: %s", time.Since(killed), line)
	follower.send("GET_ALL /servers/")
	untilLineWithout(t, follower, "| /servers/2 |", "/servers/1")
	follower.send("GET /servers/1")
	untilLine(t, follower, "!!!! Property '/servers/1' is undefined")

	late := startREPL(t, "late", args("late")...)
	late.send("LEASES")
	late.expect("**** Leases of SharedConfig: 'someConfig' (time left by the server's clock, as last seen):")
	untilLineWithout(t, late, "| /servers/2 ", "/servers/1")
	late.send("GET /servers/1")
	untilLine(t, late, "!!!! Property '/servers/1' is undefined")
	late.send("QUIT")
	untilLine(t, late, "**** Exiting...")

	// A clean exit revokes at once.
	s2.send("QUIT")
	s2.expect("**** Exiting...")
	untilLine(t, follower, "REVOKE_LEASE /servers/2 -- lease /servers/2 revoked, removing /servers/2")
	follower.send("QUIT")
	untilLine(t, follower, "**** Exiting...")
}

// A one-shot `sharedconfig watch` is a process that follows as much as a
// following shell is: it writes the expiry of a lease whose holder was
// killed, so the membership example works with it as the only watcher.
func oneShotWatchExpiresLeases(t *testing.T) {
	args := membershipServer(t)
	const ttl = 3 * time.Second
	s1 := startREPL(t, "server-1", args("server-1")...)
	s1.send("REGISTER_LEASE /servers/1, 3s")
	s1.expect("**** Lease '/servers/1' registered with ttl 3s, held by server-1")
	s1.send("PUT_WITH_LEASE /servers/1, up, /servers/1")
	s1.expect("**** Property '/servers/1' added with value 'up', under lease '/servers/1'")

	watch := startREPL(t, "watch", args("watcher", "watch", "/servers/")...)
	untilLine(t, watch, "**** Watching keys starting '/servers/'")
	s1.wantExit = -1
	if err := s1.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	killed := time.Now()
	line := untilLine(t, watch, "lease /servers/1 expired, removing /servers/1")
	if took := time.Since(killed); took > ttl+2*time.Second {
		t.Errorf("the watch printed the expiry %s after the kill, more than the ttl (%s) and 2s: %s", took, ttl, line)
	}
	if err := watch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
