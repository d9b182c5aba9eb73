package cmd

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// A read-only command whose time runs out fails in the same one line, exit
// status 1, wherever it ran out: at the config's look-up, or while reading
// it.
func TestReadOutOfTimeIsOneFailedLine(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "put", "a", "1")
	proxy := jstest.NewProxy(t, strings.TrimPrefix(os.Getenv("NATS_URL"), "nats://"))
	const want = "!!!! Error: no answer from the server within 300ms; is it running? ("
	for _, at := range []string{"$JS.API.STREAM.INFO.", "$JS.API.DIRECT.GET."} {
		for _, command := range [][]string{{"get", "a"}, {"get", "a", "--raw"}, {"get-all"}, {"export"}, {"keys"}} {
			proxy.FreezeOn(at)
			var stdout, stderr bytes.Buffer
			args := append([]string{"--server", proxy.URL(), "-s", "cache", "--no-cache", "--timeout", "300ms"}, command...)
			code := Main(args, strings.NewReader(""), &stdout, &stderr)
			if lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); code != exitFailures || len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Errorf("%q, the server hanging at %s: exit status %d, stderr %q; want %d and one line starting %q", command, at, code, stderr.String(), exitFailures, want)
			}
			proxy.Thaw()
		}
	}
}

// A write the server stops answering fails within about its --timeout,
// the look that settles whether it landed included, and says truthfully
// that the change may or may not have been made.
func TestWriteUnansweredEndsWithinItsTimeout(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "put", "a", "1")
	proxy := jstest.NewProxy(t, strings.TrimPrefix(os.Getenv("NATS_URL"), "nats://"))
	// The append itself, so that it may have landed: not the reads before.
	proxy.FreezeOn("HPUB sharedconfig.cache.someConfig _INBOX")
	const timeout = time.Second
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := Main([]string{"--server", proxy.URL(), "-s", "cache", "--timeout", timeout.String(), "put", "a", "2"}, strings.NewReader(""), &stdout, &stderr)
	took := time.Since(start)
	const want = "!!!! Error: no answer from the server within 1s: the change may or may not have been made; REFRESH, then look ("
	if code != exitFailures || !strings.HasPrefix(stderr.String(), want) {
		t.Fatalf("put, the server hanging at the append: exit status %d, stderr %q; want %d and a line starting %q", code, stderr.String(), exitFailures, want)
	}
	// The ping that tells a silent server, and a loaded machine, may add a
	// little; the settle look alone used to add seconds.
	if took > timeout+700*time.Millisecond {
		t.Fatalf("put with --timeout %s took %s", timeout, took)
	}
}
