package cmd

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/repl"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
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
	// damaged: its index was not to be trusted, so the file is written
	// again at the end even if the copy did not move on.
	damaged bool
}

// replicaFor is the replica cache's file for the config in log; nil when
// the cache is off or there is no directory for it.
func (f *rootFlags) replicaFor(nc *nats.Conn, log *jetstream.Log) *replica {
	// The stream's info came with opening the log: no request of its own.
	r := f.cacheFile(nc, log.Name())
	if r != nil {
		info := log.Stream().CachedInfo()
		r.stamp.Created = info.Created
		r.stamp.DirectGets = info.Config.AllowDirect && info.Config.Replicas <= 1 && nc.ConnectedClusterName() == "" && !log.DirectGetsRefused()
	}
	return r
}

// cacheFile is the replica cache's file for stream on nc's server, its
// stamp without the stream's creation time; nil when the cache is off or
// there is no directory for it.
func (f *rootFlags) cacheFile(nc *nats.Conn, stream string) *replica {
	if f.noCache || os.Getenv(noCacheEnv) != "" {
		return nil
	}
	dir := f.cacheDir
	if dir == "" {
		var err error
		if dir, err = replicacache.Dir(); err != nil {
			return nil
		}
	}
	server := "server:" + nc.ConnectedServerName()
	if cluster := nc.ConnectedClusterName(); cluster != "" {
		server = "cluster:" + cluster
	}
	r := &replica{stamp: replicacache.Stamp{Server: server, Stream: stream}}
	r.path = replicacache.Path(dir, r.stamp)
	return r
}

// cachedValue is key's property in the replica cache's copy of the config
// the flags name, when the config's last entry is the very one that copy
// stands at: the answer of a one-shot get in one request, a direct get of
// that entry, where opening the config looks its stream up first. That
// entry binds the copy to the stream as its creation time would: its ID,
// which anyone who may publish on the subject can copy, and the server's
// time on it, which nobody chooses. ok is false when it cannot tell (no
// file or index, the config moved on, a cluster, a stream that did not
// answer direct gets when the copy was saved, any failure): the config is
// then opened as usual, which says what is wrong, if anything is.
func (f *rootFlags) cachedValue(ctx context.Context, nc *nats.Conn, key string) (p replicacache.Property, found, ok bool) {
	r := f.cacheFile(nc, jetstream.StreamName(f.scope, f.name))
	if r == nil || nc.ConnectedClusterName() != "" {
		return p, false, false
	}
	copied, err := replicacache.Peek(r.path, r.stamp, key)
	if err != nil || !copied.DirectGets {
		return p, false, false
	}
	// A stream that does not serve direct gets never answers one: wait
	// briefly, and once only. A user who may not ask for them hears so at
	// once.
	ctx, cancel := context.WithTimeout(ctx, min(f.timeout, quickGetTimeout))
	defer cancel()
	last, at, err := jetstream.LastEntry(ctx, nc, f.scope, f.name)
	var refused *jetstream.PermissionError
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &refused) {
		_ = replicacache.NoDirectGets(r.path, r.stamp)
	}
	if err != nil || last.ID == "" || last.Revision != copied.Revision || last.ID != copied.ID || !at.Equal(copied.Time) {
		return p, false, false
	}
	return copied.Property, copied.Found, true
}

// quickGetTimeout bounds cachedValue's one request.
const quickGetTimeout = 500 * time.Millisecond

// load is the checkpoint the file holds, if it can be used for the config
// in log. A copy the log was compacted past is not: the catch-up would
// read the snapshot that replaced its entry, which replaces the copy, so
// decoding it would be time lost (about a fifth of the CPU of a get of a
// 20,000-key config in that case).
func (r *replica) load(log *jetstream.Log) []byte {
	if r == nil {
		return nil
	}
	checkpoint, revision, err := replicacache.Load(r.path, r.stamp)
	if err != nil || revision < log.Stream().CachedInfo().State.FirstSeq || !heldBy(log, checkpoint) {
		// Missing, not to be trusted, compacted past, or purged under:
		// the config is read from the server, and the file replaced when
		// the session ends.
		return nil
	}
	r.revision = revision
	return checkpoint
}

// heldBy: the stream still holds the snapshot the checkpoint's state
// stems from, so that reading on from the copy reads what any reader
// would; after a purge by hand that kept the newest entries it does not,
// and the copy would answer what no one else can read.
func heldBy(log *jetstream.Log, checkpoint []byte) bool {
	base, err := statesync.CheckpointBase(checkpoint)
	return err == nil && base >= log.Stream().CachedInfo().State.FirstSeq
}

// oneKeyMostEntries bounds the entries a one-shot get reads after the
// file's copy when it opens the config for one key: past it, the whole
// copy is read, and a newer one saved, so that the next get reads fewer.
const oneKeyMostEntries = 1000

// openOneKey opens the config in log holding, of its properties, key alone,
// from the file's index: the entries written since the copy are read and
// applied as to the whole config. nil when the file holds no index, cannot
// be used, is too far behind, or was compacted past (the catch-up would
// read the whole snapshot, and nothing would save it), or the config does
// not open so.
func (r *replica) openOneKey(ctx context.Context, log *jetstream.Log, key string, o sharedconfig.Options) *sharedconfig.Config {
	checkpoint, revision, err := replicacache.Lookup(r.path, r.stamp, key)
	if err != nil {
		r.damaged = errors.Is(err, replicacache.ErrUntrusted)
		return nil
	}
	state := log.Stream().CachedInfo().State
	if state.LastSeq < revision || state.LastSeq-revision > oneKeyMostEntries || state.FirstSeq > revision || !heldBy(log, checkpoint) {
		return nil
	}
	// A config that holds one key must never write a snapshot of itself.
	o.Resume, o.Compaction = checkpoint, false
	cfg, err := sharedconfig.Open(ctx, log, o)
	if err != nil {
		if cfg != nil {
			cfg.Close()
		}
		return nil
	}
	return cfg
}

// noteDirectGets records, in the stamp the file is saved with, that the
// stream did not serve direct gets to this user if the server refused one
// of the session's (known only once its reads have asked).
func (r *replica) noteDirectGets(log *jetstream.Log) {
	if r != nil && log.DirectGetsRefused() {
		r.stamp.DirectGets = false
	}
}

// save writes cfg's copy, and its index, to the cache when it moved on
// from the one the session started from, and can be resumed from, if it
// can by due: encoding a large copy takes seconds, and a process whose
// command used up its --timeout must not run that much past it. A save
// that cannot finish by then writes nothing, nor one a signal (SIGINT,
// SIGTERM: stopped closed) cuts short by repl.ExitBudget. A failure to
// write only costs the next process a full read: it is not reported.
func (r *replica) save(cfg *sharedconfig.Config, due time.Time, stopped <-chan struct{}) {
	if r == nil || cfg.State().Revision() == r.revision && !r.damaged {
		return
	}
	within(due, stopped, func() func() {
		st := cfg.State()
		checkpoint, ok, err := cfg.Checkpoint()
		if err != nil || !ok || cfg.State().Revision() != st.Revision() {
			return nil // moved on meanwhile: the next process saves
		}
		index := indexOf(checkpoint, st)
		return func() { _ = replicacache.Save(r.path, r.stamp, st.Revision(), checkpoint, index) }
	})
}

// within runs encode and then the write it returns (if any), unless due
// passes first: then it returns at due, and encode, which it leaves
// running, writes nothing. A write once begun is waited for, so that the
// process never ends in the middle of one (it would leave its temporary
// file behind: the file itself is renamed into place whole). Once stopped
// is closed (a signal), it waits repl.ExitBudget more at most, as a
// leaving process does. done is closed once encode is over and the write
// done or given up.
func within(due time.Time, stopped <-chan struct{}, encode func() (write func())) (done <-chan struct{}) {
	over := make(chan struct{})
	left := time.Until(due)
	if left <= 0 {
		close(over)
		return over
	}
	var mu sync.Mutex
	late := false
	go func() {
		defer close(over)
		write := encode()
		mu.Lock()
		defer mu.Unlock()
		if write != nil && !late {
			write()
		}
	}()
	timer := time.NewTimer(left)
	defer timer.Stop()
	for {
		select {
		case <-over:
			return over
		case <-stopped:
			if time.Until(due) > repl.ExitBudget {
				timer.Reset(repl.ExitBudget)
			}
			stopped = nil // heard: the timer says when to give up
		case <-timer.C:
			mu.Lock()
			late = true
			mu.Unlock()
			return over
		}
	}
}

// indexOf is the index of checkpoint, a copy of st; nil if it cannot be
// built (the file is then used whole).
func indexOf(checkpoint []byte, st sharedconfig.State) []byte {
	props := func(yield func(replicacache.Property) bool) {
		for k, p := range st.All() {
			if !yield(replicacache.Property{Key: k, Value: p.Value, Revision: p.Revision, Lease: p.Lease}) {
				return
			}
		}
	}
	var leases []string
	for name := range st.Leases() {
		leases = append(leases, name)
	}
	index, err := replicacache.NewIndex(checkpoint, props, leases)
	if err != nil {
		return nil
	}
	return index
}

// loadTrust is what earlier processes of this user learned of other
// writers' turns words on the config in s's log (see turns.Options.Trust),
// from the file beside its cache file; nil when there is none to use, and
// then the config trusts such words in full at first.
func (s *session) loadTrust(f *rootFlags) *turns.Trust {
	r := f.cacheFile(s.nc, s.log.Name())
	if r == nil {
		return nil
	}
	s.trustPath = replicacache.TrustPath(r.path)
	t, err := replicacache.LoadTrust(s.trustPath)
	if err != nil {
		return nil
	}
	// Clamped before it is scaled: a huge number must not wrap to none.
	return &turns.Trust{Most: time.Duration(min(t.MostMS, int64(time.Hour/time.Millisecond))) * time.Millisecond, At: t.At, MadeUp: t.MadeUp}
}

// saveTrust keeps what the session's config learned of other writers'
// turns words for the next process, if it judged a claim that came to
// nothing. A failure only costs the next process what this one learned:
// it is not reported.
func (s *session) saveTrust() {
	if s.trustPath == "" {
		return
	}
	if t, learned := s.cfg.TurnsTrust(); learned {
		_ = replicacache.SaveTrust(s.trustPath, replicacache.Trust{MostMS: t.Most.Milliseconds(), At: t.At, MadeUp: t.MadeUp})
	}
}
