package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// serverFlags are the server command's flags.
type serverFlags struct {
	listen, dataDir string
	idle            time.Duration
	routes          string
	o               localserver.ServerOptions
}

func newServerCmd() *cobra.Command {
	var f serverFlags
	c := &cobra.Command{
		Use:   "server",
		Short: "Run a NATS server with JetStream for sharedconfig, in the foreground",
		Long: `server runs an embedded NATS server with JetStream and a file store, listening
on a loopback address, until Ctrl-C, SIGTERM or SIGHUP (unless started with
it ignored, as by nohup). Every acknowledged write is synced to disk. The
data directory is locked: one server per directory. Its warnings and errors
go to stderr.

With --private it admits only clients that hold the keys it keeps in its data
directory (made on first use, readable by their owner only): it speaks TLS
with its own certificate from the first byte, and admits one NKey user. The
shells use such a server with no --server when it listens on their local
port and serves their --data-dir: that is how they start one in the
background.`,
		Example: `  sharedconfig server --listen 127.0.0.1:4333 --data-dir ./data
  sharedconfig --server nats://127.0.0.1:4333     # a shell on it, in another terminal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServer(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:4222", "loopback `HOST:PORT` to listen on")
	fl.StringVar(&f.dataDir, "data-dir", "", "`DIR` for the file store (default: "+defaultDataDirHelp()+")")
	fl.BoolVar(&f.o.Private, "private", false, "admit only clients holding the keys in the data directory (this user's shells)")
	fl.DurationVar(&f.idle, "exit-when-idle", 0, "exit once no client has been connected for this long (0: never)")
	fl.DurationVar(&f.o.SyncInterval, "sync-interval", 0, "sync the store to disk this often instead of before acknowledging every write (faster; a machine crash can lose acknowledged writes)")
	fl.StringVar(&f.o.ServerName, "server-name", "", "this node's `NAME`, unique in its cluster")
	fl.StringVar(&f.o.ClusterName, "cluster-name", "", "run as a node of the JetStream cluster `NAME`")
	fl.StringVar(&f.o.ClusterListen, "cluster-listen", "", "`HOST:PORT` where the other nodes reach this one")
	fl.StringVar(&f.routes, "routes", "", "the other nodes' cluster `URLS`, comma-separated (nats://host:port)")
	fl.BoolVar(&f.o.AllowRemote, "allow-remote", false, "listen on non-loopback addresses (real hosts; secure them with NATS authentication and TLS)")
	return c
}

// runServer runs "server": it serves until the command's context ends
// (SIGINT, SIGTERM) or, with --exit-when-idle, it has had no clients for
// that long.
func runServer(cmd *cobra.Command, f serverFlags) error {
	o, stderr := f.o, cmd.ErrOrStderr()
	o.Listen, o.DataDir, o.Log = f.listen, f.dataDir, stderr
	if o.DataDir == "" {
		var err error
		if o.DataDir, err = defaultDataDir(); err != nil {
			return &exitError{exitStartup, err}
		}
	}
	for _, r := range strings.Split(f.routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			o.Routes = append(o.Routes, r)
		}
	}
	srv, err := localserver.StartServer(o)
	if err != nil {
		return &exitError{exitStartup, err}
	}
	defer srv.Shutdown()
	if o.ClusterName != "" {
		fmt.Fprintf(stderr, "sharedconfig server %s: listening on %s, cluster %s on %s, data in %s\n", o.ServerName, srv.ClientURL(), o.ClusterName, o.ClusterListen, o.DataDir)
	} else {
		fmt.Fprintf(stderr, "sharedconfig server: listening on %s, data in %s\n", srv.ClientURL(), o.DataDir)
	}
	if f.idle <= 0 {
		<-cmd.Context().Done()
	} else {
		waitIdle(cmd.Context().Done(), srv, f.idle)
	}
	fmt.Fprintln(stderr, "sharedconfig server: shutting down")
	return nil
}

// waitIdle returns when done closes or srv has had no clients for idle.
func waitIdle(done <-chan struct{}, srv *localserver.Server, idle time.Duration) {
	tick := time.NewTicker(max(min(idle/4, time.Second), time.Millisecond)) // above zero, or NewTicker panics
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			if srv.NumClients() > 0 {
				last = now
			} else if now.Sub(last) >= idle {
				return
			}
		}
	}
}
