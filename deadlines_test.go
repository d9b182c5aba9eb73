package main

import "testing"

// TestHeldToDeadlines runs the tests that hold processes to deadlines of
// seconds (a lease's expiry within its ttl and 2 s, a refusal or an exit
// within a second or two). Not parallel with the other tests, whose
// processes could starve these of CPU on a loaded machine; in parallel with
// each other, since each mostly waits (for a ttl, a server that hangs) with
// a few processes of its own.
func TestHeldToDeadlines(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"MembershipLeaseExpiresAfterKill", membershipLeaseExpiresAfterKill},
		{"OneShotWatchExpiresLeases", oneShotWatchExpiresLeases},
		{"StoppedHolderDoesNotKeepTheNextRegistrationAlive", stoppedHolderDoesNotKeepTheNextRegistrationAlive},
		{"NoWriteBehindTheUsersBack", noWriteBehindTheUsersBack},
		{"ExitIsQuickWhenTheServerHangs", exitIsQuickWhenTheServerHangs},
		{"StartIsStoppableWhenTheServerHangs", startIsStoppableWhenTheServerHangs},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}
