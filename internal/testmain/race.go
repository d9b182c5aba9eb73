//go:build race && unix

package testmain

import (
	"os"
	"strings"
	"syscall"
)

const (
	exitSleepFlag = "atexit_sleep_ms"
	// execedEnv marks the binary started again, so that it never starts
	// itself a second time, whatever it finds in GORACE.
	execedEnv = "SHAREDCONFIG_TESTMAIN_EXECED"
)

// SkipRaceExitSleep starts the test binary again in place of this one
// (exec, same process, same arguments) with the race runtime's sleep at
// exit turned off, unless GORACE already says how long to sleep. The
// runtime reads GORACE only as the process starts, so setting it here is
// too late for this process itself. It is a no-op without -race.
func SkipRaceExitSleep() {
	gorace := os.Getenv("GORACE")
	if strings.Contains(gorace, exitSleepFlag) || os.Getenv(execedEnv) != "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	// One GORACE: of two, the runtime would read the first.
	env := []string{"GORACE=" + strings.TrimSpace(gorace+" "+exitSleepFlag+"=0"), execedEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	// On success Exec does not return; on failure the tests run as they
	// are, with the sleep.
	_ = syscall.Exec(exe, os.Args, env)
}
