//go:build !race || !unix

package testmain_test

const raceEnabled = false
