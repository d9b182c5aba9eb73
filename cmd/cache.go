package cmd

import (
	"os"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// noCacheEnv, set to anything, turns the replica cache off as --no-cache
// does.
const noCacheEnv = "SHAREDCONFIG_NO_CACHE"

// replica is a session's file in the replica cache (see docs/operations.md):
// what the config opened from, and where its copy goes when the session
// ends.
type replica struct {
	path  string
	stamp replicacache.Stamp
	// revision is that of the copy the file held; 0 when there was none
	// to use.
	revision uint64
}

// cacheFor is the replica cache's file for the config in log, and the
// checkpoint it holds if that can be used; nil when the cache is off or
// there is no directory for it.
func (f *rootFlags) cacheFor(nc *nats.Conn, log *jetstream.Log) (*replica, []byte) {
	if f.noCache || os.Getenv(noCacheEnv) != "" {
		return nil, nil
	}
	dir, err := replicacache.Dir()
	if err != nil {
		return nil, nil
	}
	server := "server:" + nc.ConnectedServerName()
	if cluster := nc.ConnectedClusterName(); cluster != "" {
		server = "cluster:" + cluster
	}
	// The stream's info came with opening the log: no request of its own.
	r := &replica{stamp: replicacache.Stamp{Server: server, Stream: log.Name(), Created: log.Stream().CachedInfo().Created}}
	r.path = replicacache.Path(dir, r.stamp)
	checkpoint, revision, err := replicacache.Load(r.path, r.stamp)
	if err != nil {
		// Missing, or not to be trusted: the config is read from the
		// server, and the file replaced when the session ends.
		return r, nil
	}
	r.revision = revision
	return r, checkpoint
}

// save writes cfg's copy to the cache when it moved on from the one the
// session started from, and can be resumed from. A failure to write only
// costs the next process a full read: it is not reported.
func (r *replica) save(cfg *sharedconfig.Config) {
	if r == nil || cfg.State().Revision() == r.revision {
		return
	}
	checkpoint, ok, err := cfg.Checkpoint()
	if err != nil || !ok {
		return
	}
	_ = replicacache.Save(r.path, r.stamp, cfg.State().Revision(), checkpoint)
}
