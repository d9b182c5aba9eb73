package repl

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// mixedScript is n lines of writes that depend on the lines before them
// (PUT_IF_ABSENT after PUT, REPLACE and REMOVE of what an earlier line
// set), with a read, a refused line or a write that fails here and there; bad
// holds the numbers of the lines that fail.
func mixedScript(n int) (lines []string, bad []int) {
	r := rand.New(rand.NewPCG(22, 5))
	for i := range n {
		k, v, w := fmt.Sprint("k", r.IntN(5)), fmt.Sprint("v", r.IntN(3)), fmt.Sprint("v", r.IntN(3))
		switch r.IntN(20) {
		case 0:
			lines = append(lines, "GET "+k)
		case 1:
			lines, bad = append(lines, "NO_SUCH "+k), append(bad, i+1)
		case 2:
			lines, bad = append(lines, "PUT "+k+", \xff"), append(bad, i+1)
		default:
			lines = append(lines, []string{"PUT " + k + ", " + v, "PUT_IF_ABSENT " + k + ", " + v, "REMOVE " + k,
				"REMOVE " + k + ", " + v, "REPLACE " + k + ", " + v, "REPLACE " + k + ", " + v + ", " + w}[r.IntN(6)])
		}
	}
	return append(lines, "GET_ALL"), bad
}

var failedLine = regexp.MustCompile(`(?m)^!!!! line (\d+): `)

// A script's writes run ahead and land together, yet every line gets, in
// order, the answer it gets when the lines run one at a time, and a failed
// line is reported with its own number.
func TestScriptWritesRunAheadWithTheirOwnAnswers(t *testing.T) {
	lines, bad := mixedScript(600)
	one, oneOut := openShell(t, jstest.Server(t), "w", Options{})
	want := run(one, oneOut, lines...)

	ahead, aheadOut := openShell(t, jstest.Server(t), "w", Options{})
	if err := ahead.Run(context.Background(), NewScript(strings.NewReader(strings.Join(lines, "\n")))); err != nil {
		t.Fatal(err)
	}
	got := aheadOut.take()
	var numbers []int
	for _, m := range failedLine.FindAllStringSubmatch(got, -1) {
		n, _ := strconv.Atoi(m[1])
		numbers = append(numbers, n)
	}
	if !slices.Equal(numbers, bad) {
		t.Errorf("failures reported at lines %v; want %v", numbers, bad)
	}
	if got = failedLine.ReplaceAllString(got, "!!!! "); got != want {
		t.Fatalf("run ahead, the script answered\n%s\none line at a time\n%s", got, want)
	}
	if ahead.Failures() != len(bad) || one.Failures() != len(bad) {
		t.Errorf("failures %d run ahead, %d one at a time; want %d", ahead.Failures(), one.Failures(), len(bad))
	}
	if ahead.cfg.State().Revision() >= one.cfg.State().Revision() {
		t.Errorf("run ahead, the writes took %d entries; one at a time %d: none landed together", ahead.cfg.State().Revision(), one.cfg.State().Revision())
	}
	t.Logf("entries: %d run ahead, %d one at a time", ahead.cfg.State().Revision(), one.cfg.State().Revision())
}

// A program that writes a line and waits for its answer before the next
// (a coprocess on a pipe) gets each answer at once: answers do not wait for
// the next line to be read.
func TestScriptAnswersAWriteBeforeTheNextLineComes(t *testing.T) {
	sh, out := openShell(t, jstest.Server(t), "w", Options{})
	in, feed := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- sh.Run(context.Background(), NewScript(in)) }()
	for i := range 3 {
		fmt.Fprintf(feed, "PUT k, v%d\n", i)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), fmt.Sprintf("'v%d'", i)) {
			if time.Now().After(deadline) {
				t.Fatalf("no answer to line %d while the script waits for it; printed so far:\n%s", i+1, out.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	feed.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A script stopped by a signal (its context ends) starts no more lines;
// those under way answer as a command cancelled with Ctrl-C does, and
// nothing blames the server, other writers or compaction.
func TestScriptStoppedBySignalSaysCancelled(t *testing.T) {
	sh, out := openShell(t, jstest.Server(t), "w", Options{})
	var lines []string
	for i := range 20000 {
		lines = append(lines, fmt.Sprintf("PUT k%d, v", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sh.Run(ctx, NewScript(strings.NewReader(strings.Join(lines, "\n")))) }()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "\n") < 1500 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatal(err)
	}
	got := out.take()
	for l := range strings.Lines(got) {
		if strings.HasPrefix(l, "!!!! ") && !strings.Contains(l, ": Cancelled: ") {
			t.Fatalf("a line stopped by the signal said %q; want Cancelled", l)
		}
	}
	if n := strings.Count(got, "\n"); n >= len(lines) {
		t.Fatalf("%d answers: the script ran on after the signal", n)
	}
	if sh.Failures() != 0 {
		t.Fatalf("%d failures; want none: a signal's stop is a clean one", sh.Failures())
	}
}
