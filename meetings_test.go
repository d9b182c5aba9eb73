package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// The meetings test: every mechanism at once. Worker processes, each with
// several goroutines (so that group commit batches them), increment one
// counter by compare-and-set while they hold leases, compact, and are
// killed with SIGKILL and restarted; the server is killed and restarted
// twice; and half-way through the config is destroyed and created again.
// In the end every acknowledged increment is in the counter once, none is
// acknowledged twice, every value no one acknowledged is accounted for by
// an unknown outcome that was reported or by a worker killed mid-flight,
// and no process ever mixed the two incarnations of the config.
//
// The counter's value is "EPOCH:N", and the key "epoch" holds EPOCH: a
// copy whose counter and epoch disagree was built from two incarnations.
//
// SHAREDCONFIG_MEETINGS=5m runs it for that long instead of a few seconds.

const meetingsWorkerEnv = "SHAREDCONFIG_TEST_MEETINGS_WORKER"

func init() {
	// The test binary runs itself as a worker: init comes before TestMain.
	if os.Getenv(meetingsWorkerEnv) == "1" {
		os.Exit(meetingsWorker())
	}
}

// meetingsWorker increments the counter until SIGTERM, printing one line
// per outcome: "ack EPOCH N", "unknown EPOCH N" or "mixed ...".
func meetingsWorker() int {
	id, url := os.Getenv("MEETINGS_ID"), os.Getenv("MEETINGS_URL")
	scope, name := os.Getenv("MEETINGS_SCOPE"), os.Getenv("MEETINGS_NAME")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: url, Name: id})
	if err != nil {
		fmt.Println("fatal", err)
		return 2
	}
	defer nc.Close()
	openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	log, err := jetstream.OpenLog(openCtx, nc, scope, name, jetstream.LogOptions{Writer: id})
	if err == nil {
		var cfg *sharedconfig.Config
		cfg, err = sharedconfig.Open(openCtx, log, sharedconfig.Options{Compaction: true, Holder: id})
		cancel()
		if err == nil {
			return runMeetingsWorker(ctx, cfg, id)
		}
	}
	cancel()
	fmt.Println("fatal", err)
	return 2
}

var meetingsOut sync.Mutex

func meetingsSay(format string, args ...any) {
	meetingsOut.Lock()
	defer meetingsOut.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

func runMeetingsWorker(ctx context.Context, cfg *sharedconfig.Config, id string) int {
	stopKeeper := cfg.Leases().Keep(nil)
	lease := "lease-" + id
	opCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := cfg.Leases().Register(opCtx, lease, 2*time.Second); err == nil {
		_, _ = cfg.Put(opCtx, "member/"+id, "alive", sharedconfig.WithLease(lease))
	}
	cancel()
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			incrementUntilDone(ctx, cfg, fmt.Sprintf("%s/%d", id, g))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = cfg.Compact(cctx) // losing a race to compact is fine
			cancel()
		}
	}()
	wg.Wait()
	stopKeeper()
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = cfg.Leases().RevokeHeld(rctx)
	return 0
}

// incrementUntilDone moves the counter from EPOCH:N to EPOCH:N+1 by
// compare-and-set, again and again.
func incrementUntilDone(ctx context.Context, cfg *sharedconfig.Config, who string) {
	for ctx.Err() == nil {
		st := cfg.State()
		counter, ok := st.Lookup("counter")
		epochProp, _ := st.Lookup("epoch")
		cur, epoch := counter.Value, epochProp.Value
		e, n, good := parseCount(cur)
		switch {
		case !ok:
			time.Sleep(20 * time.Millisecond) // a new incarnation, not yet set up
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = cfg.Refresh(rctx)
			cancel()
			continue
		case !good:
			meetingsSay("mixed %s counter %q is not EPOCH:N", who, cur)
			return
		case e != epoch:
			meetingsSay("mixed %s counter %q beside epoch %q at revision %d", who, cur, epoch, cfg.State().Revision())
			time.Sleep(100 * time.Millisecond)
			continue
		}
		next := fmt.Sprintf("%s:%d", e, n+1)
		opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		r, err := cfg.Replace(opCtx, "counter", next, sharedconfig.IfValue(cur))
		cancel()
		switch {
		case err == nil && r.Written:
			meetingsSay("ack %s %d", e, n+1)
		case err == nil:
			// Refused: the counter had moved on; the update caught up.
		case ctx.Err() != nil && errors.Is(err, context.Canceled):
			meetingsSay("unknown %s %d", e, n+1)
			return
		default:
			meetingsSay("unknown %s %d %s", e, n+1, strings.ReplaceAll(err.Error(), "\n", " "))
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func parseCount(v string) (epoch string, n int, ok bool) {
	e, num, found := strings.Cut(v, ":")
	if !found {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	return e, n, err == nil
}

// meetings is the harness: a server process, the workers, and what they said.
type meetings struct {
	t            *testing.T
	url, dataDir string
	listen       string
	scope, name  string
	server       *exec.Cmd
	mu           sync.Mutex
	workers      map[string]*exec.Cmd
	lines        []string
	epoch        string         // the incarnation the workers are on
	killed       map[string]int // workers killed, by incarnation
	finals       map[string]string
	readers      sync.WaitGroup
}

func TestMeetings(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes for several seconds")
	}
	run := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SHAREDCONFIG_MEETINGS")); err == nil {
		run = d
	}
	port := freePort(t)
	m := &meetings{t: t, listen: "127.0.0.1:" + strconv.Itoa(port), url: "nats://127.0.0.1:" + strconv.Itoa(port),
		dataDir: t.TempDir(), scope: "meet", name: "counter", workers: map[string]*exec.Cmd{},
		epoch: "e1", killed: map[string]int{}, finals: map[string]string{}}
	m.startServer()
	t.Cleanup(m.stopAll)
	m.create("e1", "old-secret", "inc1")
	for i := range 4 {
		m.startWorker(fmt.Sprintf("w%d", i))
	}
	deadline := time.Now().Add(run)
	// Other tests' processes may starve the workers: past its time, each
	// incarnation goes on, for up to a minute more, until it has counted
	// enough to show progress, and the run until the one worker never
	// killed has counted in the new incarnation.
	starved := deadline.Add(time.Minute)
	progressed := func(epoch string) func() bool {
		return func() bool { return m.acks(epoch) >= minProgress || time.Now().After(starved) }
	}
	events := m.events(run, progressed)
	for time.Now().Before(deadline) || len(events) > 0 ||
		!(m.said("w0 ack e2 ") && progressed("e2")()) && time.Now().Before(starved) {
		time.Sleep(1200 * time.Millisecond)
		m.killAndRestartWorker()
		elapsed := run - time.Until(deadline)
		for len(events) > 0 && elapsed >= events[0].at && events[0].ready() {
			events[0].do()
			events = events[1:]
		}
	}
	m.stopWorkers()
	if m.epoch != "e2" {
		t.Fatal("the run ended before the config was destroyed and created again")
	}
	m.check("e1", m.finals["e1"])
	m.check("e2", m.get("counter"))
	if v := m.cli("get-all"); strings.Contains(v, "old-secret") {
		t.Errorf("a key of the destroyed incarnation is back:\n%s", v)
	}
	if !m.said("w0 ack e2 ") {
		t.Error("w0, alive across the destroy, acknowledged no increment of the new incarnation")
	}
}

// meetingEvent is done once the run is at least at its time and it is
// ready.
type meetingEvent struct {
	at    time.Duration
	ready func() bool
	do    func()
}

// events are the server's restarts, and the destroy once the first
// incarnation has progressed.
func (m *meetings) events(run time.Duration, progressed func(epoch string) func() bool) []meetingEvent {
	always := func() bool { return true }
	return []meetingEvent{
		{run * 2 / 10, always, m.restartServer},
		{run * 3 / 10, progressed("e1"), m.destroyAndRecreate},
		{run * 7 / 10, always, m.restartServer},
	}
}

// minProgress is how many increments an incarnation must count: fewer,
// and the workers made no real progress.
const minProgress = 20

// acks is how many increments of epoch were acknowledged.
func (m *meetings) acks(epoch string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, line := range m.lines {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "ack" && f[2] == epoch {
			n++
		}
	}
	return n
}

func (m *meetings) said(prefix string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, line := range m.lines {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

func (m *meetings) startServer() {
	m.t.Helper()
	cmd := programCommand("server", "--listen", m.listen, "--data-dir", m.dataDir)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.server = cmd
	for end := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", m.listen, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(end) {
			m.t.Fatal("the server did not start listening")
		}
	}
}

func (m *meetings) restartServer() {
	m.t.Log("kill -9 the server, then start it again")
	_ = m.server.Process.Kill()
	_ = m.server.Wait()
	time.Sleep(300 * time.Millisecond)
	m.startServer()
}

// cli runs a one-shot command and returns its stdout, failing the test on
// a non-zero exit.
func (m *meetings) cli(args ...string) string {
	m.t.Helper()
	full := append([]string{"--server", m.url, "-s", m.scope, "-n", m.name, "--timeout", "10s"}, args...)
	cmd := programCommand(full...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		m.t.Fatalf("sharedconfig %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

func (m *meetings) get(key string) string {
	out := m.cli("get", key)
	const prefix = "**** The value of property '"
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix+key+"' is '"); ok {
			return strings.TrimSuffix(rest, "'")
		}
	}
	m.t.Fatalf("get %s said %q", key, out)
	return ""
}

// create sets up an incarnation: its epoch first, so that no worker sees a
// counter without the epoch it belongs to.
func (m *meetings) create(epoch string, extra ...string) {
	m.cli("put", "epoch", epoch)
	for i := 0; i+1 < len(extra); i += 2 {
		m.cli("put", extra[i], extra[i+1])
	}
	m.cli("put", "counter", epoch+":0")
}

func (m *meetings) startWorker(id string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), meetingsWorkerEnv+"=1", "MEETINGS_ID="+id, "MEETINGS_URL="+m.url,
		"MEETINGS_SCOPE="+m.scope, "MEETINGS_NAME="+m.name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.mu.Lock()
	m.workers[id] = cmd
	m.mu.Unlock()
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, id+" "+sc.Text())
			m.mu.Unlock()
		}
	}()
}

func (m *meetings) killAndRestartWorker() {
	m.mu.Lock()
	// w0 is never killed: it must live through the destroy and go on.
	id := fmt.Sprintf("w%d", 1+rand.IntN(len(m.workers)-1))
	cmd := m.workers[id]
	m.killed[m.epoch]++
	m.mu.Unlock()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	m.startWorker(id)
}

// destroyAndRecreate stops every worker (SIGSTOP), reads the first
// incarnation's final count, destroys the config and creates it again,
// then lets the workers go on: they must notice and start over on the new
// one.
func (m *meetings) destroyAndRecreate() {
	m.t.Log("destroy the config and create it again under stopped workers")
	m.signalWorkers(syscall.SIGSTOP)
	time.Sleep(300 * time.Millisecond) // appends already sent land first
	m.finals["e1"] = m.get("counter")
	m.cli("destroy", "--yes")
	m.create("e2")
	m.mu.Lock()
	m.epoch = "e2"
	m.mu.Unlock()
	m.signalWorkers(syscall.SIGCONT)
}

func (m *meetings) signalWorkers(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, cmd := range m.workers {
		_ = cmd.Process.Signal(sig)
	}
}

func (m *meetings) stopWorkers() {
	m.signalWorkers(syscall.SIGTERM)
	m.mu.Lock()
	workers := m.workers
	m.workers = map[string]*exec.Cmd{}
	m.mu.Unlock()
	for id, cmd := range workers {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(patience):
			_ = cmd.Process.Kill()
			m.t.Errorf("worker %s did not exit within %s of SIGTERM", id, patience)
			<-done
		}
	}
	m.readers.Wait()
}

func (m *meetings) stopAll() {
	m.mu.Lock()
	for _, cmd := range m.workers {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	m.mu.Unlock()
	m.readers.Wait()
	if m.server != nil {
		_ = m.server.Process.Kill()
		_ = m.server.Wait()
	}
}

// check judges one incarnation against its final counter.
func (m *meetings) check(epoch, final string) {
	m.t.Helper()
	e, total, ok := parseCount(final)
	if !ok || e != epoch {
		m.t.Fatalf("the counter of incarnation %s ended as %q", epoch, final)
	}
	m.mu.Lock()
	lines := append([]string(nil), m.lines...)
	m.mu.Unlock()
	acked := map[int]int{}
	unknown, mixed := 0, 0
	for _, line := range lines {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[1] == "mixed":
			mixed++
			if mixed <= 5 {
				m.t.Errorf("a process mixed two incarnations: %s", line)
			}
		case len(f) >= 4 && f[2] == epoch && f[1] == "ack":
			n, _ := strconv.Atoi(f[3])
			acked[n]++
		case len(f) >= 4 && f[2] == epoch && f[1] == "unknown":
			unknown++
		}
	}
	doubled, lost := 0, 0
	for n, count := range acked {
		if count > 1 {
			if doubled++; doubled <= 5 {
				m.t.Errorf("incarnation %s: increment to %d acknowledged %d times", epoch, n, count)
			}
		}
		if n > total {
			if lost++; lost <= 5 {
				m.t.Errorf("incarnation %s: increment to %d acknowledged, but the counter ended at %d", epoch, n, total)
			}
		}
	}
	if doubled+lost > 10 {
		m.t.Errorf("incarnation %s: %d increments acknowledged twice, %d acknowledged and lost", epoch, doubled, lost)
	}
	gaps := total - len(acked)
	m.mu.Lock()
	killed := m.killed[epoch]
	m.mu.Unlock()
	inFlight := 3 * killed // each killed worker had up to 3 increments in flight
	m.t.Logf("incarnation %s: counter %d, acknowledged %d, unacknowledged %d, unknown outcomes reported %d, workers killed %d",
		epoch, total, len(acked), gaps, unknown, killed)
	if gaps > unknown+inFlight {
		m.t.Errorf("incarnation %s: %d increments no one acknowledged, but only %d unknown outcomes were reported and %d could have been in flight in killed workers",
			epoch, gaps, unknown, inFlight)
	}
	if total < minProgress {
		m.t.Errorf("incarnation %s: only %d increments: the workers made no real progress", epoch, total)
	}
}
