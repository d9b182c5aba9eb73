package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

// connFlags are how the shell reaches NATS.
type connFlags struct {
	opts    jetstream.ConnectOptions
	dataDir string
}

func (c *connFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&c.opts.URLs, "server", "", "NATS server `URLS`, comma-separated (default: $NATS_URL, else a local server at 127.0.0.1:4222, started if needed)")
	fl.StringVar(&c.dataDir, "data-dir", "", "where a local server started by sharedconfig keeps its data (default: "+defaultDataDir()+")")
	fl.StringVar(&c.opts.Creds, "creds", "", "NATS credentials `FILE`")
	fl.StringVar(&c.opts.User, "user", "", "NATS user name")
	fl.StringVar(&c.opts.Password, "password", "", "NATS password")
	fl.StringVar(&c.opts.Token, "token", "", "NATS authentication token")
	fl.StringVar(&c.opts.CACert, "tls-ca", "", "trust the CA certificate in `FILE`")
	fl.StringVar(&c.opts.Cert, "tls-cert", "", "client certificate `FILE`")
	fl.StringVar(&c.opts.Key, "tls-key", "", "client key `FILE`")
}

// localPort is where the local server listens, or is started.
func localPort() string {
	if p := os.Getenv("SHAREDCONFIG_LOCAL_PORT"); p != "" {
		return p
	}
	return "4222"
}

// connect connects as the flags say. Without --server or NATS_URL it uses
// the local server, starting one in the background if none answers.
func (c *connFlags) connect(ctx context.Context) (*nats.Conn, error) {
	c.opts.Name = "sharedconfig"
	if c.opts.URLs != "" || os.Getenv("NATS_URL") != "" {
		return jetstream.Connect(c.opts)
	}
	listen := "127.0.0.1:" + localPort()
	local := c.opts
	local.URLs = "nats://" + listen
	local.Timeout = time.Second
	if nc, err := jetstream.Connect(local); err == nil {
		return nc, nil
	}
	dir := c.dataDir
	if dir == "" {
		dir = defaultDataDir()
	}
	logPath, err := startLocalServer(listen, dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := jetstream.Connect(local)
		if err == nil {
			return nc, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("started a local server on %s, but cannot connect to it: %v%s", listen, err, tail(logPath))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// idleExit is how long an auto-started server waits after its last client
// leaves before it exits.
const idleExit = 30 * time.Second

// startLocalServer starts "sharedconfig server" as a background process in a
// session of its own, so that it outlives the shell that started it and
// serves every shell on this machine until idleExit after the last one
// leaves. If several shells start one at once, the data directory's lock
// lets one win and the others exit; every shell then connects to the winner.
func startLocalServer(listen, dir string) (logPath string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("starting a local server: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("starting a local server: %w", err)
	}
	logPath = filepath.Join(dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("starting a local server: %w", err)
	}
	defer logFile.Close()
	proc, err := startDetached(exe, []string{"server", "--listen", listen, "--data-dir", dir, "--exit-when-idle", idleExit.String()}, logFile)
	if err != nil {
		return "", fmt.Errorf("starting a local server: %w", err)
	}
	return logPath, proc.Release()
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
// ~/.local/share/sharedconfig on Linux, the application-support folder
// elsewhere.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sharedconfig")
	}
	if runtime.GOOS != "linux" {
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, "sharedconfig")
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "sharedconfig")
	}
	return filepath.Join(os.TempDir(), "sharedconfig")
}
