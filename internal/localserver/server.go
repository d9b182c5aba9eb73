package localserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerOptions configure an embedded server.
type ServerOptions struct {
	// Listen is host:port; the host must be a loopback address unless
	// AllowRemote is set. Port 0 picks a free port.
	Listen string
	// AllowRemote permits a non-loopback Listen address.
	AllowRemote bool
	// DataDir holds the file store. The server takes an exclusive lock on
	// it: two servers on one store would hand out the same sequences.
	DataDir string
	// MaxPayload is the largest message the server takes; 0 means 1 MiB.
	MaxPayload int32
	// SyncInterval: 0 syncs every write to disk before acknowledging it;
	// more syncs that often, faster but able to lose acknowledged writes
	// in a crash of the machine (see Jepsen's NATS 2.12.1 analysis).
	SyncInterval time.Duration
	// Private admits only clients holding the keys kept in DataDir (made on
	// first use): TLS with the server's own certificate, and an NKey user.
	// Connect with ConnectOptions.LocalDataDir to reach it.
	Private bool
	// Log receives the server's warnings and errors, one line each; nil
	// drops them.
	Log io.Writer

	// A node of a JetStream cluster: a name unique in the cluster, the
	// cluster's name, the address for other nodes (host:port), and the
	// other nodes' cluster addresses (nats://host:port). All or none.
	ServerName    string
	ClusterName   string
	ClusterListen string
	Routes        []string
}

// Server is an embedded nats-server with JetStream and a file store.
type Server struct {
	ns   *server.Server
	lock *os.File
	once sync.Once
}

// ErrDataDirLocked: another process serves the data directory.
var ErrDataDirLocked = errors.New("the data directory is in use by another sharedconfig server")

// StartServer starts a server and waits until it takes connections.
func StartServer(o ServerOptions) (*Server, error) {
	opts, err := serverOptions(o)
	if err != nil {
		return nil, err
	}
	if err := PrepareDataDir(o.DataDir, o.Private); err != nil {
		return nil, err
	}
	lock, err := lockDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	if o.Private {
		if err := privateOptions(opts, o); err != nil {
			lock.Close()
			return nil, err
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	// A logger whose Fatalf does not exit, so that a failure to start
	// JetStream comes back as an error.
	logger := &captureLogger{out: o.Log}
	ns.SetLogger(logger, false, false)
	ns.Start()
	if !logger.waitReady(ns, 10*time.Second) || !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		lock.Close()
		if msg := logger.failure(); msg != "" {
			return nil, fmt.Errorf("starting the server: %s", msg)
		}
		return nil, fmt.Errorf("the server on %s did not start within 10s", o.Listen)
	}
	if o.Private {
		if err := recordPort(o.DataDir, ns.Addr().(*net.TCPAddr).Port); err != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
			lock.Close()
			return nil, err
		}
	}
	return &Server{ns: ns, lock: lock}, nil
}

// serverOptions checks o and turns it into nats-server's options, all but
// the private part.
func serverOptions(o ServerOptions) (*server.Options, error) {
	host, portStr, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %v (want host:port, e.g. 127.0.0.1:4222)", o.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("listen address %q: the port must be a number from 0 to 65535", o.Listen)
	}
	if port == 0 {
		port = -1 // nats-server takes 0 to mean 4222 and -1 to mean any free port
	}
	if !o.AllowRemote && !isLoopback(host) {
		return nil, fmt.Errorf("listen address %q is not a loopback address: the embedded server serves this machine only", o.Listen)
	}
	if o.DataDir == "" {
		return nil, errors.New("the server needs a data directory")
	}
	if o.SyncInterval < 0 || o.SyncInterval > 0 && o.SyncInterval < time.Millisecond {
		// nats-server panics on the first stream below 2ns (and on any
		// negative interval), and anything that short is not an interval.
		return nil, fmt.Errorf("sync interval %s: give 0 (sync every write) or 1ms or more", o.SyncInterval)
	}
	opts := &server.Options{
		ServerName: o.ServerName,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.DataDir,
		NoSigs:     true, // else SIGINT makes the server call os.Exit
		NoLog:      true,
		MaxPayload: o.MaxPayload,
		// Every acknowledged write is on disk: this is a consistency tool.
		SyncAlways:   o.SyncInterval == 0,
		SyncInterval: o.SyncInterval,
	}
	if err := clusterOptions(opts, o); err != nil {
		return nil, err
	}
	if opts.ServerName == "" {
		opts.ServerName = storeName(o.DataDir)
	}
	return opts, nil
}

// storeName is the name of a standalone server not given one: the same
// for every start on one data directory, since it serves the same streams
// (nats-server would make up a new one at each start, and the replica
// cache, which keys its files by it, would start afresh each time).
func storeName(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return "sharedconfig-" + hex.EncodeToString(sum[:6])
}

// clusterOptions fills in the cluster part of opts.
func clusterOptions(opts *server.Options, o ServerOptions) error {
	if o.ClusterName == "" && o.ClusterListen == "" && len(o.Routes) == 0 {
		return nil
	}
	if o.ServerName == "" || o.ClusterName == "" || o.ClusterListen == "" {
		return errors.New("a cluster node needs a server name, a cluster name and a cluster listen address")
	}
	host, portStr, err := net.SplitHostPort(o.ClusterListen)
	if err != nil {
		return fmt.Errorf("cluster listen address %q: %v (want host:port)", o.ClusterListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("cluster listen address %q: the port must be a number from 1 to 65535", o.ClusterListen)
	}
	if !o.AllowRemote && !isLoopback(host) {
		return fmt.Errorf("cluster listen address %q is not a loopback address: give --allow-remote to serve other hosts", o.ClusterListen)
	}
	for _, r := range o.Routes {
		if u, err := url.Parse(r); err != nil || u.Host == "" {
			return fmt.Errorf("route %q: want nats://host:port", r)
		}
	}
	opts.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: host, Port: port}
	opts.Routes = server.RoutesFromStr(strings.Join(o.Routes, ","))
	return nil
}

// privateOptions make a standalone server admit only holders of the keys
// in its data directory.
func privateOptions(opts *server.Options, o ServerOptions) error {
	if o.ClusterName != "" {
		return errors.New("a private server cannot be a cluster node")
	}
	keys, err := loadLocalKeys(o.DataDir)
	if err != nil {
		return err
	}
	return keys.serverOptions(opts)
}

// WaitJetStreamReady waits until the JetStream cluster has a leader that
// sees every peer current, and this node is current (a standalone server is
// ready at once).
func (s *Server) WaitJetStreamReady(timeout time.Duration) error {
	if !s.ns.JetStreamIsClustered() {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for !(s.metaReady() && s.ns.JetStreamIsCurrent()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the JetStream cluster is not ready (a leader seeing every peer) after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// metaReady: the cluster has a leader and, asked on the leader (the one
// that knows), every peer is current, so that a stream can be placed on any
// of them ("no suitable peers for placement" otherwise, under load).
func (s *Server) metaReady() bool {
	info, err := s.ns.Jsz(&server.JSzOptions{})
	if err != nil || info.Meta == nil || info.Meta.Leader == "" {
		return false
	}
	if info.Meta.Leader != s.ns.Name() {
		return true
	}
	if len(info.Meta.Replicas) < info.Meta.Size-1 {
		return false
	}
	for _, p := range info.Meta.Replicas {
		if !p.Current || p.Offline {
			return false
		}
	}
	return true
}

// Name is the server's name.
func (s *Server) Name() string { return s.ns.Name() }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ClientURL is the URL clients connect to.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// NumClients is the number of clients connected now.
func (s *Server) NumClients() int { return s.ns.NumClients() }

// Shutdown stops the server, flushing its store, and releases the data
// directory. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.lock.Close()
	})
}

// captureLogger keeps the server's errors, to report why it did not start,
// and writes its warnings and errors to out. Its Fatalf does not exit.
type captureLogger struct {
	mu     sync.Mutex
	out    io.Writer
	errors []string
	fatal  bool // the server cannot go on (it could not listen, say)
}

// waitReady waits until ns takes connections, for at most within, and no
// longer once the server has said it cannot go on: a port another process
// holds is not waited out as a slow start.
func (l *captureLogger) waitReady(ns *server.Server, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if ns.ReadyForConnections(25 * time.Millisecond) {
			return true
		}
		l.mu.Lock()
		fatal := l.fatal
		l.mu.Unlock()
		if fatal {
			return false
		}
	}
	return false
}

func (l *captureLogger) write(level, format string, v ...any) {
	if l.out == nil {
		return
	}
	line := fmt.Sprintf("%s [%s] %s\n", time.Now().UTC().Format(time.RFC3339), level, fmt.Sprintf(format, v...))
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.out, line)
}

func (l *captureLogger) record(level, format string, v ...any) {
	l.write(level, format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, fmt.Sprintf(format, v...))
}

func (l *captureLogger) failure() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.errors, "; ")
}

func (l *captureLogger) Noticef(string, ...any)         {}
func (l *captureLogger) Debugf(string, ...any)          {}
func (l *captureLogger) Tracef(string, ...any)          {}
func (l *captureLogger) Warnf(format string, v ...any)  { l.write("WRN", format, v...) }
func (l *captureLogger) Errorf(format string, v ...any) { l.record("ERR", format, v...) }
func (l *captureLogger) Fatalf(format string, v ...any) {
	l.record("FTL", format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fatal = true
}
