package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/jetstream"
)

func newServerCmd() *cobra.Command {
	var (
		listen, dataDir string
		idle            time.Duration
		o               jetstream.ServerOptions
		routes          string
	)
	c := &cobra.Command{
		Use:   "server",
		Short: "Run a NATS server with JetStream for sharedconfig, in the foreground",
		Long: `server runs an embedded NATS server with JetStream and a file store, listening
on a loopback address, until it is interrupted (Ctrl-C or SIGTERM). Every
acknowledged write is synced to disk. The data directory is locked: one
server per directory. Its warnings and errors go to stderr.

With --private it admits only clients that hold the keys it keeps in its data
directory (made on first use, readable by their owner only): it speaks TLS
with its own certificate from the first byte, and admits one NKey user. The
shells use such a server with no --server when it listens on their local
port and serves their --data-dir: that is how they start one in the
background.`,
		Example: `  sharedconfig server --listen 127.0.0.1:4222 --data-dir ./data`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				var err error
				if dataDir, err = defaultDataDir(); err != nil {
					return &exitError{exitStartup, err}
				}
			}
			o.Listen, o.DataDir = listen, dataDir
			o.Log = cmd.ErrOrStderr()
			for _, r := range strings.Split(routes, ",") {
				if r = strings.TrimSpace(r); r != "" {
					o.Routes = append(o.Routes, r)
				}
			}
			srv, err := jetstream.StartServer(o)
			if err != nil {
				return &exitError{exitStartup, err}
			}
			defer srv.Shutdown()
			if o.ClusterName != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "sharedconfig server %s: listening on %s, cluster %s on %s, data in %s\n", o.ServerName, srv.ClientURL(), o.ClusterName, o.ClusterListen, dataDir)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "sharedconfig server: listening on %s, data in %s\n", srv.ClientURL(), dataDir)
			}
			ctx := cmd.Context()
			if idle <= 0 {
				<-ctx.Done()
			} else {
				waitIdle(ctx.Done(), srv, idle)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "sharedconfig server: shutting down")
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:4222", "loopback `HOST:PORT` to listen on")
	c.Flags().StringVar(&dataDir, "data-dir", "", "`DIR` for the file store (default: "+defaultDataDirHelp()+")")
	c.Flags().BoolVar(&o.Private, "private", false, "admit only clients holding the keys in the data directory (this user's shells)")
	c.Flags().DurationVar(&idle, "exit-when-idle", 0, "exit once no client has been connected for this long (0: never)")
	c.Flags().DurationVar(&o.SyncInterval, "sync-interval", 0, "sync the store to disk this often instead of before acknowledging every write (faster; a machine crash can lose acknowledged writes)")
	c.Flags().StringVar(&o.ServerName, "server-name", "", "this node's `NAME`, unique in its cluster")
	c.Flags().StringVar(&o.ClusterName, "cluster-name", "", "run as a node of the JetStream cluster `NAME`")
	c.Flags().StringVar(&o.ClusterListen, "cluster-listen", "", "`HOST:PORT` where the other nodes reach this one")
	c.Flags().StringVar(&routes, "routes", "", "the other nodes' cluster `URLS`, comma-separated (nats://host:port)")
	c.Flags().BoolVar(&o.AllowRemote, "allow-remote", false, "listen on non-loopback addresses (real hosts; secure them with NATS authentication and TLS)")
	return c
}

// waitIdle returns when done closes or srv has had no clients for idle.
func waitIdle(done <-chan struct{}, srv *jetstream.Server, idle time.Duration) {
	tick := time.NewTicker(min(idle/4, time.Second))
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
