// Package jstest starts real embedded NATS servers for tests: each on a free
// loopback port with its own temporary store.
package jstest

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// Server starts a server that is shut down when the test ends.
func Server(t testing.TB) *localserver.Server {
	t.Helper()
	return ServerAt(t, t.TempDir(), "127.0.0.1:0")
}

// ServerAt starts a server on listen with its store in dir, shut down when
// the test ends (or earlier, by the test). A port of 0 is replaced by a free
// port outside the kernel's ephemeral range, so that a test that stops the
// server and starts it again on the same address does not find the port
// taken by some connection's local end meanwhile.
func ServerAt(t testing.TB, dir, listen string) *localserver.Server {
	t.Helper()
	if host, port, err := net.SplitHostPort(listen); err == nil && port == "0" {
		listen = net.JoinHostPort(host, strconv.Itoa(freePorts(t, 1)[0]))
	}
	s, err := startServer(localserver.ServerOptions{Listen: listen, DataDir: dir})
	if err != nil {
		t.Fatalf("starting the test server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// startServer starts a server, trying again for a while when its port is
// still in use: another test's port check may hold it for a moment.
func startServer(o localserver.ServerOptions) (*localserver.Server, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := localserver.StartServer(o)
		if err == nil || !strings.Contains(err.Error(), "address already in use") || time.Now().After(deadline) {
			return s, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NATS starts a plain nats-server with the given options on a free
// loopback port, for what the embedded server does not do (authentication,
// TLS, no JetStream); it is shut down when the test ends.
func NATS(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	o.Host, o.Port, o.NoSigs, o.NoLog = "127.0.0.1", -1, true, true
	if o.JetStream {
		o.StoreDir = t.TempDir()
	}
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("the nats-server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Connect opens a connection to s, closed when the test ends.
func Connect(t testing.TB, s *localserver.Server) *nats.Conn {
	t.Helper()
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL()})
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// ConnectURL opens a connection to url (a proxy's, say), as Connect does,
// closed when the test ends.
func ConnectURL(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: url})
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Node is one server of a test cluster, which can be stopped and started
// again on the same ports and store.
type Node struct {
	Opts   localserver.ServerOptions
	Server *localserver.Server
}

// Cluster starts an n-node JetStream cluster on loopback ports, each node
// with its own store, and waits until it has a leader. The nodes are shut
// down when the test ends.
func Cluster(t testing.TB, n int) []*Node {
	t.Helper()
	clientPorts, clusterPorts := freePorts(t, n), freePorts(t, n)
	var routes []string
	for _, p := range clusterPorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	nodes := make([]*Node, n)
	for i := range n {
		nodes[i] = &Node{Opts: localserver.ServerOptions{
			Listen:        fmt.Sprintf("127.0.0.1:%d", clientPorts[i]),
			DataDir:       t.TempDir(),
			ServerName:    fmt.Sprintf("node%d", i+1),
			ClusterName:   "test",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", clusterPorts[i]),
			Routes:        routes,
		}}
		nodes[i].Start(t)
	}
	for _, node := range nodes {
		if err := node.Server.WaitJetStreamReady(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// Start starts the node.
func (n *Node) Start(t testing.TB) {
	t.Helper()
	s, err := startServer(n.Opts)
	if err != nil {
		t.Fatalf("starting %s: %v", n.Opts.ServerName, err)
	}
	n.Server = s
	t.Cleanup(s.Shutdown)
}

// URLs is the nodes' client URLs, comma-separated.
func URLs(nodes []*Node) string {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, "nats://"+n.Opts.Listen)
	}
	return strings.Join(urls, ",")
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := localserver.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// MoreInParallel lets 4 tests per CPU run at once unless -parallel is
// given. Call it from TestMain, before m.Run: tests that mostly wait for
// servers, processes and lease ttls leave the CPUs idle at go test's default
// of GOMAXPROCS at a time. Tests that time themselves stay sequential, and
// so run before any parallel one starts.
func MoreInParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
}

// Users starts a JetStream nats-server with the options in o (MaxPayload,
// say) and users: "admin", who may do anything, and one user for each
// entry of perms, with those permissions. Every password is "p". It
// returns the server's URL for a user (nats://user:p@host:port).
func Users(t testing.TB, o *server.Options, perms map[string]*server.Permissions) (url func(user string) string) {
	t.Helper()
	o.JetStream = true
	o.Users = []*server.User{{Username: "admin", Password: "p"}}
	for user, p := range perms {
		o.Users = append(o.Users, &server.User{Username: user, Password: "p", Permissions: p})
	}
	s := NATS(t, o)
	hostPort := strings.TrimPrefix(s.ClientURL(), "nats://")
	return func(user string) string { return "nats://" + user + ":p@" + hostPort }
}

// DocumentedPermissions are the permissions docs/operations.md says
// sharedconfig needs: its block that starts with "permissions: {", read
// as nats-server reads a user's permissions in its configuration file.
func DocumentedPermissions(t testing.TB) *server.Permissions {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, found := strings.Cut(string(doc), "\npermissions: {\n")
	block, _, ended := strings.Cut(block, "\n}\n")
	if !found || !ended {
		t.Fatal(`docs/operations.md has no block from "permissions: {" to "}"`)
	}
	conf := filepath.Join(t.TempDir(), "perms.conf")
	text := "authorization {\n  users = [\n    {user: doc, password: p, permissions: {\n" + block + "\n    }}\n  ]\n}\n"
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("the permissions in docs/operations.md do not read as nats-server's: %v", err)
	}
	if len(o.Users) != 1 || o.Users[0].Permissions == nil {
		t.Fatalf("the permissions in docs/operations.md read as %+v", o.Users)
	}
	return o.Users[0].Permissions
}

// WithoutDirectGets is p, but denied to publish to $JS.API.DIRECT.GET.>:
// direct gets, which the documented permissions call optional.
func WithoutDirectGets(p *server.Permissions) *server.Permissions {
	without := *p
	without.Publish = &server.SubjectPermission{Deny: []string{"$JS.API.DIRECT.GET.>"}}
	if p.Publish != nil {
		without.Publish.Allow = p.Publish.Allow
		without.Publish.Deny = append(slices.Clone(p.Publish.Deny), without.Publish.Deny...)
	}
	return &without
}
