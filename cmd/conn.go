package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
)

// connFlags are how the shell reaches NATS.
type connFlags struct {
	opts    localserver.ConnectOptions
	dataDir string
	stderr  func() io.Writer
}

func (c *connFlags) register(cmd *cobra.Command) {
	c.stderr = cmd.ErrOrStderr
	fl := cmd.Flags()
	fl.StringVar(&c.opts.URLs, "server", "", "NATS server `URLS`, comma-separated (default: the NATS context's, else $NATS_URL, else your local server at 127.0.0.1:4222, started if needed)")
	fl.StringVar(&c.dataDir, "data-dir", "", "the local server's data directory: the one it is started on, and whose keys the shell uses to reach it (default: "+defaultDataDirHelp()+")")
	fl.StringVar(&c.opts.Creds, "creds", "", "NATS credentials `FILE`")
	fl.StringVar(&c.opts.User, "user", "", "NATS user name")
	fl.StringVar(&c.opts.Password, "password", "", "NATS password")
	fl.StringVar(&c.opts.Token, "token", "", "NATS authentication token")
	fl.StringVar(&c.opts.CACert, "tls-ca", "", "trust the CA certificate in `FILE`")
	fl.StringVar(&c.opts.Cert, "tls-cert", "", "client certificate `FILE`")
	fl.StringVar(&c.opts.Key, "tls-key", "", "client key `FILE`")
}

// localPort is where the local server of data directory dir listens, or is
// started: SHAREDCONFIG_LOCAL_PORT if set, else the port recorded in dir,
// else 4222 for the default directory and a free port, recorded, for any
// other, so that the servers of two directories do not meet on one port.
func localPort(dir string) (string, error) {
	if p, ok, err := knownLocalPort(dir); ok || err != nil {
		return p, err
	}
	free, err := localserver.FreePorts(1)
	if err != nil {
		return "", fmt.Errorf("finding a free port for the local server: %w", err)
	}
	port, err := localserver.ClaimPort(dir, free[0])
	return strconv.Itoa(port), err
}

// knownLocalPort is localPort without choosing one: ok is false for a data
// directory, other than the default, that has none recorded yet.
func knownLocalPort(dir string) (port string, ok bool, err error) {
	if p := os.Getenv("SHAREDCONFIG_LOCAL_PORT"); p != "" {
		return p, true, nil
	}
	recorded, err := localserver.RecordedPort(dir)
	if err != nil || recorded != 0 {
		return strconv.Itoa(recorded), err == nil, err
	}
	if def, err := defaultDataDir(); err == nil && filepath.Clean(def) == filepath.Clean(dir) {
		return "4222", true, nil
	}
	return "", false, nil
}

// connect connects as the flags say. Without --server or NATS_URL it uses
// the local server, starting one in the background if none answers.
func (c *connFlags) connect(ctx context.Context) (*nats.Conn, error) {
	c.opts.Name = "sharedconfig"
	c.opts.AsyncError = asyncErrors(c.stderr)
	if c.opts.URLs != "" || os.Getenv("NATS_URL") != "" {
		nc, err := localserver.Connect(c.opts)
		if tf := (*localserver.TLSFirstError)(nil); errors.As(err, &tf) {
			return nil, c.tlsFirst(tf)
		}
		return nc, err
	}
	dir, err := c.localDataDir()
	if err != nil {
		return nil, err
	}
	if c.opts.HasAuth() || c.opts.CACert != "" || c.opts.Cert != "" || c.opts.Key != "" {
		// Said here, before anything is sent: whatever listens on the port
		// is not to blame.
		return nil, fmt.Errorf("the authentication and TLS options are for a server given with --server, NATS_URL or a context's url; the local server admits only its owner, by the keys in %s", dir)
	}
	ls, err := prepareLocalServer(dir)
	if err != nil {
		return nil, err
	}
	local := c.opts
	local.URLs = "nats://" + ls.listen
	local.LocalDataDir = dir
	local.Timeout = localConnectTimeout
	local.ReconnectFailed = ls.restart
	nc, err := localserver.Connect(local)
	if err == nil {
		return nc, nil
	}
	if listening(ls.listen) {
		return nil, ls.notYours(err)
	}
	pid, err := ls.start()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := localserver.Connect(local)
		if err == nil {
			if localserver.ServerPID(dir) == pid {
				fmt.Fprintf(c.stderr(), "sharedconfig: started a local server on %s (data in %s, log in %s; it exits %s after its last client)\n",
					ls.listen, visible(dir), visible(filepath.Join(dir, localserver.ServerLogFile)), idleExit)
			}
			return nc, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("started a local server on %s, but cannot connect to it: %v%s", ls.listen, err, tail(filepath.Join(dir, localserver.ServerLogFile)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prepareLocalServer checks data directory dir, makes its keys if they are
// missing, and finds its port.
func prepareLocalServer(dir string) (*localServer, error) {
	if err := localserver.PrepareDataDir(dir, true); err != nil {
		return nil, err
	}
	if err := localserver.PrepareLocalKeys(dir); err != nil {
		return nil, err
	}
	port, err := localPort(dir)
	if err != nil {
		return nil, err
	}
	return &localServer{listen: "127.0.0.1:" + port, dir: dir}, nil
}

// localDataDir is the local server's data directory: --data-dir, or the
// user's default.
func (c *connFlags) localDataDir() (string, error) {
	if c.dataDir != "" {
		return c.dataDir, nil
	}
	return defaultDataDir()
}

// tlsFirst explains a server given by address that closed the connection
// because it talks TLS from the first byte: most likely the user's own
// local server, which is reached by giving no address.
func (c *connFlags) tlsFirst(tf *localserver.TLSFirstError) error {
	dir, err := c.localDataDir()
	if err != nil || !localserver.IsLocalServerCert(dir, tf.Cert) {
		return fmt.Errorf("cannot connect to %s: it talks TLS from the first byte and is not your local server for %s (a private sharedconfig server admits only its owner, who reaches it with no --server and its --data-dir)", tf.Addr, dir)
	}
	how := "give no --server, NATS_URL or context url"
	if _, port, _ := net.SplitHostPort(tf.Addr); !samePort(dir, port) {
		how += ", and set SHAREDCONFIG_LOCAL_PORT=" + port
	}
	return fmt.Errorf("cannot connect to %s: that is your local sharedconfig server (data in %s), which talks TLS from the first byte and admits only you, by the keys there: to use it, %s", tf.Addr, dir, how)
}

// samePort says whether port is the one a shell with no --server uses for
// data directory dir.
func samePort(dir, port string) bool {
	p, ok, _ := knownLocalPort(dir)
	return ok && p == port
}

// listening says whether something accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// localConnectTimeout bounds connecting to the local server, TLS and
// authentication included.
const localConnectTimeout = 2 * time.Second

// idleExit is how long an auto-started server waits after its last client
// leaves before it exits.
const idleExit = 30 * time.Second

// localServer is the server a shell uses when given no address: private to
// the user, on a loopback port and a data directory.
type localServer struct {
	listen, dir string

	mu        sync.Mutex
	lastStart time.Time
}

// notYours explains a refusal to use what listens on the local port: it is
// not the user's sharedconfig server for this data directory, so the
// shell sent it nothing.
func (ls *localServer) notYours(err error) error {
	msg := err.Error()
	reason := strings.TrimPrefix(msg, "cannot connect to nats://"+ls.listen+": ")
	switch {
	case strings.Contains(msg, "does not look like a TLS handshake"):
		reason = "it does not speak TLS first"
	case strings.Contains(msg, "certificate"):
		reason = "its TLS certificate is not the one in " + ls.dir + ": it may be your server for another data directory"
	case strings.Contains(msg, "timeout"):
		// Yours too may be this slow (stopped, or on a loaded machine):
		// say what was seen, not more.
		return fmt.Errorf("%s does not answer as your sharedconfig server for %s (no answer within %s): if yours is busy, try again; otherwise stop what listens there, or give --server", ls.listen, ls.dir, localConnectTimeout)
	}
	return fmt.Errorf("%s is not your sharedconfig server for %s (%s): stop it, give --server, or give this data directory another port with SHAREDCONFIG_LOCAL_PORT", ls.listen, ls.dir, reason)
}

// restart starts a new server when the one the shell used is gone and
// nothing listens on its port, as a new shell would: the shells still
// running all try, and the data directory's lock lets one of them win.
// Called after each failed reconnect, so a start that failed is tried
// again, at most every two seconds.
func (ls *localServer) restart(err error) {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if time.Since(ls.lastStart) < 2*time.Second {
		return
	}
	ls.lastStart = time.Now()
	ls.start() // a failure is in server.log; the next failed reconnect tries again
}

// start starts "sharedconfig server --private" as a background process in
// a session of its own, so that it outlives the shell that started it and
// serves every shell of this user until idleExit after the last one
// leaves. If several shells start one at once, the data directory's lock
// lets one win and the others exit; every shell then connects to the
// winner.
func (ls *localServer) start() (pid int, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("starting a local server: %w", err)
	}
	logFile, err := localserver.OpenServerLog(ls.dir)
	if err != nil {
		return 0, fmt.Errorf("starting a local server: %w", err)
	}
	defer logFile.Close()
	args := []string{"server", "--private", "--listen", ls.listen, "--data-dir", ls.dir, "--exit-when-idle", idleExit.String()}
	proc, err := startDetached(exe, args, logFile)
	if err != nil {
		return 0, fmt.Errorf("starting a local server: %w", err)
	}
	pid = proc.Pid // before Release, which clears it
	return pid, proc.Release()
}

// tail returns the end of a log file, to explain a failure.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return "\n" + path + " says: " + lines[len(lines)-1]
}

// defaultDataDir is the user's data directory: $XDG_DATA_HOME/sharedconfig,
// ~/.local/share/sharedconfig on Linux and other Unix systems, the
// application-support folder on macOS and Windows. Without $HOME it takes
// the home directory from the password database; it never falls back to a
// shared place such as /tmp, where another user could prepare it.
func defaultDataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "sharedconfig"), nil
	}
	if runtime.GOOS == "windows" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("no data directory (%v): give --data-dir", err)
		}
		return filepath.Join(d, "sharedconfig"), nil
	}
	home := os.Getenv("HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	if !filepath.IsAbs(home) {
		return "", errors.New("no home directory ($HOME is unset, and the password database has none): give --data-dir")
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "sharedconfig"), nil
	}
	return filepath.Join(home, ".local", "share", "sharedconfig"), nil
}

// defaultDataDirHelp is the default data directory, for help texts.
func defaultDataDirHelp() string {
	d, err := defaultDataDir()
	if err != nil {
		return "none: $HOME is unset"
	}
	return d
}

// asyncErrors reports what the server says apart from any request on
// stderr, escaped, once per message (a subscription refused on the
// config's subject explains a follow that sees nothing). Those the log
// dealt with are dropped: a refused direct get (reads ask the leader
// instead), a refusal the request it ended reports itself. So are those
// about the turns subject: its words are hints, and a user who may not use
// it loses only fairness.
func asyncErrors(stderr func() io.Writer) func(subject string, err error) {
	var mu sync.Mutex
	said := map[string]bool{}
	return func(subject string, err error) {
		msg := err.Error()
		if errors.Is(err, jetstream.ErrHandled) ||
			jetstream.IsTurnsSubject(subject) || strings.Contains(msg, jetstream.TurnsSuffix+`"`) || strings.Contains(msg, jetstream.TurnsSuffix+".") {
			return
		}
		if subject != "" && !strings.Contains(msg, subject) {
			msg += " (subscription to " + subject + ")"
		}
		mu.Lock()
		defer mu.Unlock()
		if said[msg] || len(said) >= maxAsyncErrors {
			return
		}
		said[msg] = true
		fmt.Fprintf(stderr(), "sharedconfig: %s\n", visible(msg))
	}
}

// maxAsyncErrors bounds the distinct messages asyncErrors says, and keeps.
const maxAsyncErrors = 20

// shownURL is the URL of the server nc is connected to, fit to show: no
// password and no token. nats.go's ConnectedUrlRedacted hides only a
// password, and nats.go reads a user with no password (nats://TOKEN@host)
// as a token.
func shownURL(nc *nats.Conn) string { return localserver.RedactURLs(nc.ConnectedUrl()) }
