package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// Values over the server's max payload and bytes that are not UTF-8: one
// clear line each, nothing written, and the shell goes on.
func TestBadValues(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startREPL(t, "p", "--server", srv.ClientURL(), "--scope", "bad")
	p.wantExit = 1
	p.send("PUT big, " + strings.Repeat("x", 1100<<10))
	p.expectPrefix("!!!! line 1: Error: an update of 1126")
	p.send("PUT k, \xff\xfe")
	p.expect(`!!!! line 2: Error: "\xff\xfe": keys, values and lease names must be UTF-8 text`)
	p.send("REGISTER_LEASE \xff, 10s")
	p.expect(`!!!! line 3: Error: "\xff": keys, values and lease names must be UTF-8 text`)
	p.send("GET_ALL")
	p.expect("**** Properties for SharedConfig: 'someConfig' :")
	p.send("PUT k, fine")
	p.expect("**** Property 'k' added with value 'fine'")
}

// A foreign entry in the stream (another program published on the config's
// subject) is stepped over: reads and writes go on. (Damaged entries, which
// do stop writes, are in testdata/script/damage.txtar.)
func TestGarbageInTheStream(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	p := startREPL(t, "p", "--server", srv.ClientURL(), "--scope", "garbage")
	p.send("PUT k, v")
	p.expect("**** Property 'k' added with value 'v'")
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	if _, err := js.Publish(context.Background(), jetstream.Subject("garbage", "someConfig"), []byte("not ours")); err != nil {
		t.Fatal(err)
	}
	p.send("REFRESH")
	p.expect("**** Properties refreshed")
	p.send("GET k")
	p.expect("**** The value of property 'k' is 'v'")
	p.send("PUT k, w")
	p.expect("**** Property 'k' updated from: 'v' to: 'w'")
	p.send("QUIT")
	p.expect("**** Exiting...")
}

func TestIncompatibleStream(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	if _, err := js.CreateStream(context.Background(), natsjs.StreamConfig{
		Name: jetstream.StreamName("x", "y"), Subjects: []string{jetstream.Subject("x", "y")}, MaxAge: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runShell(t, "GET k\n", "--server", srv.ClientURL(), "-s", "x", "-n", "y")
	if code != 2 || !strings.Contains(stderr, "stream SC_1_x_y exists with settings sharedconfig cannot use") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestNoJetStream(t *testing.T) {
	t.Parallel()
	s := jstest.NATS(t, &server.Options{})
	_, stderr, code := runShell(t, "GET k\n", "--server", s.ClientURL())
	if code != 2 || !strings.Contains(stderr, "does not have JetStream enabled") || !strings.Contains(stderr, "(start nats-server with -js)") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// No secret appears in STATUS or in errors.
func TestNoSecretsShown(t *testing.T) {
	t.Parallel()
	s := jstest.NATS(t, &server.Options{JetStream: true, Username: "alice", Password: "pa55word"})
	hostPort := strings.TrimPrefix(s.ClientURL(), "nats://")
	stdout, stderr, code := runShell(t, "STATUS\n", "--server", "nats://alice:pa55word@"+hostPort)
	if code != 0 || strings.Contains(stdout+stderr, "pa55word") || !strings.Contains(stdout, "**** Server:") {
		t.Fatalf("STATUS with a password in the URL: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runShell(t, "STATUS\n", "--server", "nats://"+hostPort, "--user", "alice", "--password", "pa55word")
	if code != 0 || strings.Contains(stdout+stderr, "pa55word") {
		t.Fatalf("STATUS with --password: exit %d\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = runShell(t, "STATUS\n", "--server", "nats://"+hostPort, "--user", "alice", "--password", "wr0ng-pa55")
	if code != 2 || strings.Contains(stderr, "wr0ng-pa55") || !strings.Contains(stderr, "Authorization Violation") {
		t.Fatalf("a wrong password: exit %d, stderr %q", code, stderr)
	}
}

// A token given in the URL (nats://TOKEN@host, as nats.go reads a user with
// no password) shows neither in STATUS, text or JSON, nor in list: the
// URL's redaction by net/url hides only a password.
func TestNoTokenShown(t *testing.T) {
	t.Parallel()
	s := jstest.NATS(t, &server.Options{JetStream: true, Authorization: "t0kenS3cret"})
	url := "nats://t0kenS3cret@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	for _, args := range [][]string{
		{"--server", url},
		{"--server", url, "-o", "json"},
	} {
		stdout, stderr, code := runShell(t, "STATUS\n", args...)
		if code != 0 || strings.Contains(stdout+stderr, "t0kenS3cret") || !strings.Contains(stdout, "127.0.0.1") {
			t.Fatalf("STATUS with a token in the URL (%v): exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	stdout, stderr, code := runShell(t, "", "--server", url, "list")
	if code != 0 || strings.Contains(stdout+stderr, "t0kenS3cret") || !strings.Contains(stdout, "127.0.0.1") {
		t.Fatalf("list with a token in the URL: exit %d\n%s%s", code, stdout, stderr)
	}
}

// On a cluster a config's stream has 3 replicas by default, and the shell
// carries on when a node goes away.
func TestShellOnACluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	nodes := jstest.Cluster(t, 3)
	p := startREPL(t, "p", "--server", jstest.URLs(nodes), "--scope", "cluster", "--timeout", "10s")
	p.send("PUT p1, v1")
	p.expect("**** Property 'p1' added with value 'v1'")
	p.send("STATUS")
	p.expect("**** Config:    cluster/someConfig")
	p.expect("**** Stream:    SC_7_cluster_someConfig (3 replicas)")
	for !strings.HasPrefix(p.next(), "**** Process:") { // the rest of STATUS, which ends with the pid
	}
	nodes[0].Server.Shutdown()
	p.send("PUT p1, v2")
	p.expect("**** Property 'p1' updated from: 'v1' to: 'v2'")
	p.send("REFRESH")
	p.expect("**** Properties refreshed")
	p.send("GET p1")
	p.expect("**** The value of property 'p1' is 'v2'")
}

// A data directory of another user is refused, by the shell and by the
// server, before anything is read or started there.
func TestDataDirOfAnotherUser(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, os.Geteuid()+12345, -1); err != nil {
		t.Skipf("cannot give a directory to another user (not root): %v", err)
	}
	env := []string{"NATS_URL=", "SHAREDCONFIG_LOCAL_PORT=" + strconv.Itoa(freePort(t))}
	want := fmt.Sprintf("sharedconfig: %s belongs to uid %d, not to you (uid %d): unsafe data directory\n", dir, os.Geteuid()+12345, os.Geteuid())
	for _, args := range [][]string{{"--data-dir", dir}, {"server", "--listen", "127.0.0.1:0", "--data-dir", dir}} {
		stdout, stderr, code := runShellEnv(t, env, "GET k\n", args...)
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, stdout, stderr, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files were made in the other user's directory: %v", entries)
	}
}

// A user the server does not let use the turns subject loses only fairness
// (docs/wire.md): no line of nats.go's about it reaches stderr. A refusal
// elsewhere fails the command with one line that names it.
func TestTurnsSubjectDeniedSaysNothing(t *testing.T) {
	t.Parallel()
	deny := []string{"sharedconfig.*.*.turns", "sharedconfig.denied.c"}
	perms := &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny},
		Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: deny}}
	s := jstest.NATS(t, &server.Options{JetStream: true, Users: []*server.User{{Username: "u", Password: "p", Permissions: perms}}})
	url := "nats://u:p@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	stdout, stderr, code := runShell(t, "PUT a, 1\nPUT a, 2\nGET a\n", "--server", url, "-s", "t", "-n", "c")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "'a' is '2'") {
		t.Errorf("exit %d, stdout %q, stderr %q; want both PUTs done and nothing on stderr", code, stdout, stderr)
	}
	_, stderr, _ = runShell(t, "", "--server", url, "-s", "t", "-n", "c", "exec", "GET a")
	if stderr != "" {
		t.Errorf("exec: stderr %q, want nothing", stderr)
	}
	_, stderr, code = runShell(t, "", "--server", url, "--timeout", "1s", "-s", "denied", "-n", "c", "put", "a", "1")
	if want := `does not permit this user to publish to "sharedconfig.denied.c"`; code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("put where publishing is denied: exit %d, stderr %q; want a failure and one line that says it %s", code, stderr, want)
	}
}

// A chunked snapshot that landed whole is in use even if dropping the
// history before it fails (here the server refuses every purge): the import
// and a COMPACT succeed, with one warning line each; the next compaction
// purges again.
func TestSnapshotInUseWhenPurgeRefused(t *testing.T) {
	t.Parallel()
	s := jstest.NATS(t, &server.Options{JetStream: true, MaxPayload: smallPayload})
	refuseEveryPurge(t, s)
	args := []string{"--server", s.ClientURL(), "-s", "purge", "-n", "c", "--timeout", "1m"}
	if _, stderr, code := runShell(t, "", append(args, "put", "before", "1")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	inUse := "the snapshot was written at 5 and is in use, but dropping the entries before it failed" // chunks 2 to 4, the last a small one
	stdout, stderr, code := runShell(t, "", append(args, "import", writeBigImport(t, smallPayload*12/10/1000))...)
	if code != 0 || !strings.Contains(stdout, "written as one snapshot") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, inUse) {
		t.Errorf("import: exit %d, stdout %q, stderr %q; want exit 0 and one warning line saying the snapshot is in use", code, stdout, stderr)
	}
	stdout, stderr, code = runShell(t, "", append(args, "exec", "COMPACT")...)
	if code != 0 || !strings.Contains(stdout, "Compacted: the snapshot at revision 8") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "written at 8 and is in use, but dropping") {
		t.Errorf("COMPACT: exit %d, stdout %q, stderr %q; want exit 0 and one warning line", code, stdout, stderr)
	}
}

// refuseEveryPurge maps the server's purge requests to a subject where the
// test answers each with an error, as a server refusing them would.
func refuseEveryPurge(t *testing.T, s *server.Server) {
	t.Helper()
	if err := s.GlobalAccount().AddMapping("$JS.API.STREAM.PURGE.*", "refused.purge.{{wildcard(1)}}"); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	refusal := []byte(`{"type":"io.nats.jetstream.api.v1.stream_purge_response","error":{"code":500,"err_code":10999,"description":"purge refused by the test"}}`)
	if _, err := nc.Subscribe("refused.purge.*", func(m *nats.Msg) { _ = m.Respond(refusal) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// repair's plan shows what it discards as LOG does: a long key, value or
// writer's name by its start and size, and the first operations of a long
// entry, not a line of megabytes.
func TestRepairPlanShortensLongEntries(t *testing.T) {
	t.Parallel()
	srv := jstest.Server(t)
	args := []string{"--server", srv.ClientURL(), "-s", "plan", "-n", "c"}
	if _, stderr, code := runShell(t, "", append(args, "put", "k", "v")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	nc := jstest.Connect(t, srv)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 5000)
	publish := func(body, writer string) {
		t.Helper()
		msg := nats.NewMsg(jetstream.Subject("plan", "c"))
		msg.Data = []byte(body)
		msg.Header.Set("Sharedconfig-Format", "1")
		msg.Header.Set("Sharedconfig-Kind", "update")
		msg.Header.Set("Sharedconfig-Writer", writer)
		if _, err := js.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	publish("garbage", "w")
	ops := fmt.Sprintf(`{"op":"put","key":"key%s","value":"value%s"}`, long, long)
	publish(`{"ops":[`+strings.Repeat(ops+",", 4)+ops+`]}`, "writer"+long)
	stdout, stderr, code := runShell(t, "", append(args, "repair")...)
	if code == 0 || !strings.Contains(stderr, "give --yes") {
		t.Fatalf("repair without --yes: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout, long) {
		t.Fatalf("the plan shows a 5,000-byte name whole (%d bytes):\n%.3000s", len(stdout), stdout)
	}
	for _, want := range []string{"| writerxxx", "… (4.9 KiB) |", "PUT keyxx", "… (4.9 KiB) = valuexx", "... and 2 more (5 operations)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the plan lacks %q:\n%s", want, stdout)
		}
	}
}

// Made-up waiters on the turns subject that say their tries take a minute
// cost a run of one-shot puts less and less: once the claims of several
// names have come to nothing, each process starts from what the ones
// before it learned of such words (the trust file beside the replica
// cache), rather than giving them the whole 3 s anew.
func TestForgedSlowWaitersCostAOneShotPutLittle(t *testing.T) {
	t.Parallel()
	s := jstest.Server(t)
	args := []string{"--server", s.ClientURL(), "-s", "forged", "-n", "c"}
	if _, stderr, code := runShell(t, "", append(args, "put", "a", "0")...); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	nc := jstest.Connect(t, s)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			nc.Publish(jetstream.Subject("forged", "c")+".turns", fmt.Appendf(nil, "once spam%d 0 60000", i))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	time.Sleep(20 * time.Millisecond)
	var took []time.Duration
	for i := range 8 {
		start := time.Now()
		if _, stderr, code := runShell(t, "", append(args, "put", "a", strconv.Itoa(i+1))...); code != 0 {
			t.Fatalf("put under forged words: exit %d, %s", code, stderr)
		}
		took = append(took, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("puts took %v", took)
	// A loaded machine may stretch one process: the bound is on the least
	// of the last three. The first ones may cost what the words claim, 3 s,
	// until three names' claims have come to nothing; then each process
	// grants such words about half what the one before it did (3 s, 1.6 s,
	// 1 s, 0.6 s), so the bound leaves room for learning that began one
	// process late, under -race on a loaded machine, and still fails
	// without it.
	if slices.Max(took) > 5*time.Second || slices.Min(took[5:]) > 1500*time.Millisecond {
		t.Errorf("puts under made-up slow waiters took %v; want less and less after the first", took)
	}
}

// get --raw on a stream that stopped serving direct gets after the copy in
// the replica cache was saved, for a user who may not ask for them: the
// first get --raw is refused (at once; a stream that stopped serving them
// would leave it waiting half a second) and marks the file; the next ones
// answer at once by the stream's leader, as get does, and say nothing of
// the refusal.
func TestGetRawWithoutDirectGetsIsQuick(t *testing.T) {
	t.Parallel()
	deny := []string{"$JS.API.DIRECT.GET.>"}
	perms := &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny}}
	s := jstest.NATS(t, &server.Options{JetStream: true, Users: []*server.User{{Username: "u", Password: "p", Permissions: perms}, {Username: "admin", Password: "p"}}})
	admin := "nats://admin:p@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	user := "nats://u:p@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache}
	if _, stderr, code := runShellEnv(t, env, "", "--server", admin, "-s", "nodirect", "-n", "c", "put", "a", "1"); code != 0 {
		t.Fatalf("put: exit %d, %s", code, stderr)
	}
	// A copy saved while the stream served direct gets.
	if _, stderr, code := runShellEnv(t, env, "", "--server", admin, "-s", "nodirect", "-n", "c", "get-all"); code != 0 {
		t.Fatalf("get-all: exit %d, %s", code, stderr)
	}
	nc, err := nats.Connect(admin)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	stream, err := js.Stream(ctx, jetstream.StreamName("nodirect", "c"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	args := []string{"--server", user, "-s", "nodirect", "-n", "c"}
	// The first asks, is refused, and marks the file so that the next
	// does not ask again.
	start := time.Now()
	if stdout, _, code := runShellEnv(t, env, "", append(args, "get", "a", "--raw")...); code != 0 || stdout != "1" || time.Since(start) > 3*time.Second {
		t.Fatalf("get a --raw from a copy saved when direct gets were served: exit %d, stdout %q, in %v; want 1 soon", code, stdout, time.Since(start))
	}
	for range 2 {
		start := time.Now()
		stdout, stderr, code := runShellEnv(t, env, "", append(args, "get", "a", "--raw")...)
		if took := time.Since(start); code != 0 || stdout != "1" || stderr != "" || took > 3*time.Second {
			t.Errorf("get a --raw: exit %d, stdout %q, stderr %q, in %v; want 1 at once and nothing on stderr", code, stdout, stderr, took)
		}
	}
}
