package repl

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// keeperRefreshed waits until the lease keeper has refreshed lease L: its
// deadline has moved from the one REGISTER_LEASE set.
func keeperRefreshed(t *testing.T, sh *Shell) {
	t.Helper()
	first, _ := sh.cfg.State().Lease("L")
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if l, ok := sh.cfg.State().Lease("L"); ok && !l.Deadline.Equal(first.Deadline) {
			return
		}
	}
	t.Fatal("the lease keeper did not refresh lease L")
}

// With TRACE ON and -o json, the tries of the lease keeper's writes between
// commands are events of their own, not tries of the next command.
func TestKeeperTriesAreNotTheNextCommandsJSON(t *testing.T) {
	sh, out := openShell(t, jstest.Server(t), "w", Options{JSON: true, Trace: true})
	run(sh, out, "REGISTER_LEASE L, 1s")
	stop := sh.KeepLeases()
	keeperRefreshed(t, sh)
	stop() // revokes L
	background := out.take()
	if !strings.Contains(background, `{"event":"background_attempt","attempt":1,"base_revision":0,"updates":1,"committed_at":`) ||
		!strings.Contains(background, `"unconditional":true}`) {
		t.Errorf("the keeper's refresh was not an event of its own: %s", background)
	}
	var reply jsonReply
	if err := json.Unmarshal([]byte(run(sh, out, "GET x")), &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Attempts) != 0 {
		t.Fatalf("GET, which writes nothing, was given the tries %+v", reply.Attempts)
	}
}

// aboveRecorder is a terminal with a line being typed: what arrives on its
// own is printed above it.
type aboveRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (a *aboveRecorder) PrintAbove(_ io.Writer, lines []string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, lines...)
	return true
}

func (a *aboveRecorder) printed() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.lines, "\n")
}

// With TRACE ON, the keeper's tries are printed above the line being typed,
// not into it, and say whose they are.
func TestKeeperTriesGoAboveThePrompt(t *testing.T) {
	sh, out := openShell(t, jstest.Server(t), "w", Options{Trace: true})
	run(sh, out, "REGISTER_LEASE L, 1s")
	var rec aboveRecorder
	var in aboveInput = &rec
	sh.above.Store(&in)
	stop := sh.KeepLeases()
	keeperRefreshed(t, sh)
	stop()
	sh.above.Store(nil)
	if got := out.take(); got != "" {
		t.Errorf("printed into the line being typed: %q", got)
	}
	if want := ".... lease keeping, in the background: try 1, unconditional (it decides nothing from the state it lands on): committed at revision"; !strings.Contains(rec.printed(), want) {
		t.Fatalf("above the prompt: %q, want a line with %q", rec.printed(), want)
	}
}

// A refresh that reached no server cannot be looked up (it is appended
// unconditionally); the shell says so, and that sending it again is safe.
func TestRefreshOfUnknownOutcome(t *testing.T) {
	srv := jstest.Server(t)
	proxy := jstest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	sh, out := openShellOn(t, jstest.ConnectURL(t, proxy.URL()), "w", Options{Timeout: time.Second})
	run(sh, out, "REGISTER_LEASE L, 60s")
	proxy.Freeze() // the server hangs: the refresh is sent, and not heard
	got := run(sh, out, "REFRESH_LEASE L")
	if want := "!!!! Lease 'L' may or may not have been refreshed (a refresh cannot be looked up); sending it again is safe, and the shell keeps refreshing it by itself ("; !strings.HasPrefix(got, want) {
		t.Fatalf("got %q, want it to start %q", got, want)
	}
}
