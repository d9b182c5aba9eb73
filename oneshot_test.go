package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// The build line README gives must build the binary it names: not into a
// package's folder (./sharedconfig is one), and somewhere git ignores.
func TestReadmeBuildLine(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^go build -o (\S+) \.`).FindAllSubmatch(readme, -1)
	if len(lines) == 0 {
		t.Fatal("README gives no 'go build -o PATH .' line")
	}
	git, gitErr := exec.LookPath("git")
	for _, l := range lines {
		out := string(l[1])
		if info, err := os.Stat(out); err == nil && info.IsDir() {
			t.Errorf("README builds into %s, which is a directory of the repository", out)
		}
		if gitErr != nil {
			continue
		}
		err := exec.Command(git, "check-ignore", "-q", "--no-index", out).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			t.Errorf("README builds %s, which git does not ignore", out)
		}
	}
}

// STATUS names the shell's own process, so that an example can stop it
// (under go run, the pid of go is not the shell's).
func TestStatusShowsPid(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startREPL(t, "p", "--server", srv.ClientURL(), "--scope", "pid")
	p.send("STATUS")
	want := fmt.Sprintf("**** Process:   pid %d", p.cmd.Process.Pid)
	for {
		if got := p.next(); got == want {
			break
		}
	}
}

// get --print-value-only (--raw) prints the value alone, byte for byte,
// with no newline added when stdout is not a terminal: $(...) and files
// get exactly what was put.
func TestGetValueOnlyIsByteExact(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "raw"}
	value := "two\nlines, \"quoted\"\ttabbed\n"
	if _, stderr, code := runShell(t, "", append(args, "put", "k", value)...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	for _, flag := range []string{"--print-value-only", "--raw"} {
		stdout, stderr, code := runShell(t, "", append(args, "get", flag, "k")...)
		if code != 0 || stdout != value || stderr != "" {
			t.Errorf("get %s: exit %d, stdout %q, stderr %q; want 0, %q, nothing", flag, code, stdout, stderr, value)
		}
	}
	stdout, stderr, code := runShell(t, "", append(args, "get", "--raw", "nope")...)
	if code != 1 || stdout != "" || stderr != "!!!! Property 'nope' is undefined\n" {
		t.Errorf("get --raw of an undefined key: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// smallPayload is the max payload of the servers the big-import tests use:
// an entry's limit, and so the sizes of snapshot chunks, scale with it, so
// an import of a few of them takes the same paths as one of a few MiB on a
// server of 1 MiB, for a sixteenth of the work.
const smallPayload = 64 << 10

// smallPayloadServer starts a server whose max payload is smallPayload.
func smallPayloadServer(t *testing.T) *localserver.Server {
	t.Helper()
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: t.TempDir(), MaxPayload: smallPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// writeBigImport writes a plain import file of n keys of 1000 bytes.
func writeBigImport(t *testing.T, n int) string {
	t.Helper()
	props := map[string]string{}
	for i := range n {
		props[fmt.Sprintf("key.%04d", i)] = fmt.Sprintf("%04d", i) + strings.Repeat("v", 996)
	}
	b, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// bigImportKeys is how many keys of 1000 bytes fill payloads max payloads
// of smallPayloadServer, and a little more.
func bigImportKeys(payloads int) int { return payloads*smallPayload/1000 + 1 }

// exportedProps runs export in a fresh process and returns its properties.
func exportedProps(t *testing.T, args []string) map[string]string {
	t.Helper()
	stdout, stderr, code := runShell(t, "", append(args, "export")...)
	if code != 0 {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	var file struct {
		Properties map[string]struct{ Value string } `json:"properties"`
	}
	if err := json.Unmarshal([]byte(stdout), &file); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for k, p := range file.Properties {
		props[k] = p.Value
	}
	return props
}

// What export writes, import reads back whatever its size: an export of
// twice the server's max payload (more than one entry) lands whole, and a
// fresh process exports the same keys and values.
func TestBigExportImportsBack(t *testing.T) {
	t.Parallel()
	srv := smallPayloadServer(t)
	// A minute per command, not 5 s: the test is of what lands, and a big
	// import under -race among parallel tests can take longer.
	src := []string{"--server", srv.ClientURL(), "--scope", "big", "-n", "src", "--timeout", "1m"}
	dst := []string{"--server", srv.ClientURL(), "--scope", "big", "-n", "dst", "--timeout", "1m"}
	if _, stderr, code := runShell(t, "", append(src, "import", writeBigImport(t, bigImportKeys(2)))...); code != 0 {
		t.Fatalf("import of the plain file: exit %d, %s", code, stderr)
	}
	exported, stderr, code := runShell(t, "", append(src, "export")...)
	if code != 0 || len(exported) < 2*smallPayload {
		t.Fatalf("export: exit %d, %d bytes, %s; want %d", code, len(exported), stderr, 2*smallPayload)
	}
	file := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runShell(t, "", append(dst, "put", "before", "1")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := runShell(t, "", append(dst, "import", file)...)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("%d added", bigImportKeys(2))) || !strings.Contains(stdout, "written as one snapshot") {
		t.Fatalf("import of a %d-byte export: exit %d, stdout %q, stderr %q", len(exported), code, stdout, stderr)
	}
	want := exportedProps(t, src)
	want["before"] = "1"
	if got := exportedProps(t, dst); !maps.Equal(got, want) {
		t.Fatalf("a fresh process exports %d keys, want the %d exported and before", len(got), len(want)-1)
	}
}

// A config whose stream holds no entry yet (created, never written: an
// interrupted first open) has no revision: list -o json leaves it out and
// says why, rather than a revision 0 no entry has.
func TestListEmptyConfig(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := jetstream.OpenLog(context.Background(), nc, "empty", "cfg", jetstream.LogOptions{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runShell(t, "", "--server", srv.ClientURL(), "-o", "json", "list")
	if code != 0 {
		t.Fatalf("list: exit %d, %s", code, stderr)
	}
	var got struct {
		Result struct{ Configs []map[string]any }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got.Result.Configs) != 1 {
		t.Fatalf("list -o json: %q (%v)", stdout, err)
	}
	c := got.Result.Configs[0]
	if _, has := c["revision"]; has || c["note"] != "no entries: created, never written" || c["properties"] != 0.0 {
		t.Errorf("the empty config is listed as %v; want no revision, a note saying why, 0 properties", c)
	}
}

// When another program's stream takes a config's subject, a PUT cannot
// create the config, and a read that finds no config says so, naming that
// stream, rather than that a PUT creates one.
func TestNoConfigWhoseSubjectAnotherStreamTakes(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	if _, err := js.CreateStream(context.Background(), natsjs.StreamConfig{Name: "GRAB", Subjects: []string{"sharedconfig.grab.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runShell(t, "", "--server", srv.ClientURL(), "-s", "grab", "put", "k", "v"); code == 0 || !strings.Contains(stderr, "stream GRAB") {
		t.Fatalf("put: exit %d, %q; want a failure naming stream GRAB", code, stderr)
	}
	for _, args := range [][]string{{"get", "k"}, {"export"}, {"-o", "json", "get", "k"}} {
		stdout, stderr, code := runShell(t, "", append([]string{"--server", srv.ClientURL(), "-s", "grab"}, args...)...)
		got := stdout + stderr
		if code != 1 || strings.Contains(got, "a PUT creates one") || !strings.Contains(got, "stream GRAB, not sharedconfig's, takes its subject sharedconfig.grab.someConfig") || strings.Count(got, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want one line naming stream GRAB, with exit status 1", args, code, got)
		}
	}
	// Another scope has no such stream: a PUT creates its config.
	if _, stderr, _ := runShell(t, "", "--server", srv.ClientURL(), "-s", "free", "get", "k"); !strings.Contains(stderr, "a PUT creates one") {
		t.Errorf("get in a free scope: %q; want the hint that a PUT creates the config", stderr)
	}
}

// An import killed (kill -9) while it writes its snapshot's chunks leaves
// the config as it was: the unfinished run holds no state, for a fresh
// process and for the next write.
func TestBigImportKilledMidwayChangesNothing(t *testing.T) {
	t.Parallel()
	srv := smallPayloadServer(t)
	args := []string{"--server", srv.ClientURL(), "--scope", "big", "-n", "killed", "--timeout", "1m"} // as above
	if _, stderr, code := runShell(t, "", append(args, "put", "before", "1")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	file := writeBigImport(t, bigImportKeys(8)) // 10 chunks, the last a small one
	nc := jstest.Connect(t, srv)
	for attempt := 1; ; attempt++ {
		if killedInsideChunks(t, nc, file, args) {
			break
		}
		if attempt == 5 {
			t.Skip("the import finished before it could be killed inside its chunks, 5 times")
		}
		if _, stderr, code := runShell(t, "", append(args, "import", "--replace", writeOne(t, "before", "1"))...); code != 0 {
			t.Fatalf("undoing the import: exit %d, %s", code, stderr)
		}
	}
	if got := exportedProps(t, args); !maps.Equal(got, map[string]string{"before": "1"}) {
		t.Fatalf("after the killed import a fresh process holds %d keys, want only before", len(got))
	}
	if _, stderr, code := runShell(t, "", append(args, "put", "after", "2")...); code != 0 {
		t.Fatalf("put after the killed import: exit %d, %s", code, stderr)
	}
	if got := exportedProps(t, args); !maps.Equal(got, map[string]string{"before": "1", "after": "2"}) {
		t.Fatalf("after the killed import and a put: %d keys, want before and after", len(got))
	}
}

func writeOne(t *testing.T, k, v string) string {
	file := filepath.Join(t.TempDir(), "one.json")
	if err := os.WriteFile(file, fmt.Appendf(nil, "{%q: %q}", k, v), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// killedInsideChunks starts an import of file and kills it as soon as it
// publishes a chunk of its snapshot that is not the last; false if the
// import ended first, or its last chunk landed before the kill.
func killedInsideChunks(t *testing.T, nc *nats.Conn, file string, args []string) bool {
	t.Helper()
	published := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(jetstream.Subject("big", "killed"), published)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := programCommand(append(args, "import", file)...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	for {
		select {
		case <-exited:
			return false
		case m := <-published:
			if i, n, ok := chunkOf(m.Header); ok && i < n-1 {
				c.Process.Signal(syscall.SIGKILL)
				<-exited
				return !lastChunkLanded(t, nc)
			}
		}
	}
}

// chunkOf reads which chunk of how many an entry's headers say it is.
func chunkOf(h nats.Header) (i, n int, ok bool) {
	if h.Get(jetstream.HeaderKind) != jetstream.KindSnapshotChunk {
		return 0, 0, false
	}
	_, err := fmt.Sscanf(h.Get(jetstream.HeaderChunk), "%d/%d", &i, &n)
	return i, n, err == nil
}

// lastChunkLanded says whether the stream's last entry is the last chunk of
// a snapshot: an import killed too late, which landed whole.
func lastChunkLanded(t *testing.T, nc *nats.Conn) bool {
	t.Helper()
	ctx := context.Background()
	js, _ := natsjs.New(nc)
	stream, err := js.Stream(ctx, jetstream.StreamName("big", "killed"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(ctx, jetstream.Subject("big", "killed"))
	if err != nil {
		t.Fatal(err)
	}
	i, n, ok := chunkOf(m.Header)
	return ok && i == n-1
}
