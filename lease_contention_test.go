package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A lease holder among contending writers, with real processes: a shell
// registers lease L with the shortest ttl (1s), puts a key under it and
// writes PUTs in a loop while other processes write as many on the same
// config. The holder, alive throughout, must keep its lease and its key.
//
// It runs only with SHAREDCONFIG_CONTENTION_SCENARIO set (to the number of
// other writers; 16 when not a number): it starts that many processes for
// tens of seconds, too much for every run on a shared 2-core machine.
func TestLiveHolderKeepsItsLeaseAmongWriterProcesses(t *testing.T) {
	t.Parallel()
	others, puts := contentionScenario(t)
	args := membershipServer(t)
	onConfig := func(writer string) []string { return args(writer, "--name", "contended") }
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeInALoop(t, fmt.Sprintf("w%d", i), puts, onConfig)
		}()
	}
	holder := startREPL(t, "holder", onConfig("holder")...)
	holder.wantExit = -1 // leaving is not what this test is about
	holder.send("REGISTER_LEASE L, 1s")
	holder.send("PUT_WITH_LEASE k, v, L")
	for i := range puts {
		holder.send(fmt.Sprintf("PUT h%d, %d", i, i))
	}
	holder.send("GET k")
	for {
		l := holder.next()
		if strings.Contains(l, "Lease 'L'") && !strings.Contains(l, "registered") {
			t.Fatalf("the holder, alive and writing, was told: %s", l)
		}
		if strings.Contains(l, "value of property 'k'") || strings.Contains(l, "Property 'k' is undefined") {
			if !strings.Contains(l, "is 'v'") {
				t.Fatalf("the holder's key under its lease: %s", l)
			}
			return
		}
	}
}

// contentionScenario is the number of other writers and of PUTs each
// process writes, or skips the test.
func contentionScenario(t *testing.T) (others, puts int) {
	v := os.Getenv("SHAREDCONFIG_CONTENTION_SCENARIO")
	if v == "" {
		t.Skip("set SHAREDCONFIG_CONTENTION_SCENARIO (to a number of writers) to run the contention scenario")
	}
	others, err := strconv.Atoi(v)
	if err != nil || others < 1 {
		others = 16
	}
	return others, 600
}

// writeInALoop runs a process that writes puts PUTs as writer, from a
// script, and fails the test if one of them fails.
func writeInALoop(t *testing.T, writer string, puts int, onConfig func(string) []string) {
	var script strings.Builder
	for i := range puts {
		fmt.Fprintf(&script, "PUT %s_%d, %d\n", writer, i, i)
	}
	c := programCommand(onConfig(writer)...)
	c.Stdin = strings.NewReader(script.String())
	var errOut strings.Builder
	c.Stderr = &errOut
	if err := c.Run(); err != nil {
		t.Errorf("writer %s: %v\n%s", writer, err, errOut.String())
	}
}
