//go:build !race || !unix

package testmain

// SkipRaceExitSleep does nothing: this binary has no race runtime, or
// cannot start itself again in place.
func SkipRaceExitSleep() {}
