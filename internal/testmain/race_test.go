//go:build race && unix

package testmain_test

const raceEnabled = true
