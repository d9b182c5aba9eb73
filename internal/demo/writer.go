package demo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// writer is one writer of a scenario: a goroutine with its own connection
// and synchronizer, running the operations it is handed one at a time.
type writer struct {
	name string
	lane int
	nc   *nats.Conn
	cfg  *sharedconfig.Config
	rec  *recorder
	jobs chan job
	done chan struct{}

	once     sync.Once
	stopKeep func()
}

type job struct {
	what string
	fn   func(c *sharedconfig.Config) error
	err  chan error
}

type openOptions struct {
	// noTurns hides the log's Announcer from the synchronizer, which then
	// hears no other writer's wait and never takes turns.
	noTurns bool
	// watchCompactions records each try of a compaction, which the
	// synchronizer's trace does not show, as the log answers it.
	watchCompactions bool
	// side labels every try of the writer (the turns scenario's runs).
	side string
	// combine: the writer combines, as every command does by default.
	combine bool
}

func startWriter(ctx context.Context, r *run, config, name string, lane int, o openOptions) (*writer, error) {
	nc, err := r.o.Dial(ctx)
	if err != nil {
		return nil, err
	}
	openCtx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	jl, err := jetstream.OpenLog(openCtx, nc, r.o.Scope, config, jetstream.LogOptions{Writer: name})
	if err != nil {
		nc.Close()
		return nil, err
	}
	var log statesync.Log = jl
	var watched *compactionWatch
	switch {
	case o.noTurns:
		log = noTurns{jl}
	case o.watchCompactions:
		watched = &compactionWatch{Log: jl, rec: r.rec, lane: lane}
		log = watched
	}
	cfg, err := sharedconfig.Open(openCtx, log, sharedconfig.Options{Trace: r.rec.traceFor(lane), Holder: name, Combining: o.combine})
	if err != nil {
		nc.Close()
		return nil, err
	}
	if watched != nil {
		watched.armed.Store(true) // the initial snapshot is not a compaction
	}
	r.rec.setSide(lane, o.side)
	w := &writer{name: name, lane: lane, nc: nc, cfg: cfg, rec: r.rec, jobs: make(chan job), done: make(chan struct{})}
	go w.loop()
	return w, nil
}

func (w *writer) loop() {
	defer close(w.done)
	for j := range w.jobs {
		w.rec.setLabel(w.lane, j.what)
		err := j.fn(w.cfg)
		w.rec.setLabel(w.lane, "")
		j.err <- err
	}
}

// do has the writer's goroutine run fn, labelling its tries what, and
// waits for it.
func (w *writer) do(what string, fn func(c *sharedconfig.Config) error) error {
	j := job{what: what, fn: fn, err: make(chan error, 1)}
	w.jobs <- j
	return <-j.err
}

// stop ends the writer at once, as a process that dies: its leases are not
// revoked, its connection just closes.
func (w *writer) stop() {
	w.once.Do(func() {
		if w.stopKeep != nil {
			w.stopKeep()
		}
		close(w.jobs)
		<-w.done
		w.nc.Close()
	})
}

// noTurns is a log without an Announcer: a synchronizer on it hears no
// other writer's wait, so it never takes turns.
type noTurns struct{ statesync.Log }

// compactionWatch records the log's answer to each try of a compaction.
type compactionWatch struct {
	*jetstream.Log
	rec   *recorder
	lane  int
	armed atomic.Bool
	tries int
}

// CompactAfter is the log's one compaction call, so the hook is on it.
func (l *compactionWatch) CompactAfter(ctx context.Context, last statesync.Position, snapshot []byte) (statesync.Position, error) {
	at, err := l.Log.CompactAfter(ctx, last, snapshot)
	rev := at.Revision
	if !l.armed.Load() {
		return at, err
	}
	l.tries++
	tr := timeline.Try{Lane: l.lane, N: l.tries, Base: last.Revision, At: time.Now()}
	var conflict *statesync.ConflictError
	switch {
	case err == nil:
		tr.Outcome, tr.Revision = timeline.Snapshot, rev
		l.tries = 0
	case errors.As(err, &conflict):
		// The synchronizer catches up to where the log said it was.
		tr.Outcome, tr.Current, tr.CaughtUp = timeline.Refused, conflict.Current, conflict.Current
	default:
		l.tries = 0
		return at, err
	}
	l.rec.add(tr)
	return at, err
}

// recorder keeps every try of every writer, in the order they were traced.
type recorder struct {
	mu        sync.Mutex
	all       []timeline.Try
	writes    int
	lastWrite map[int]int    // lane -> its write under way
	label     map[int]string // lane -> what its job does
	side      map[int]string
}

func newRecorder() *recorder {
	return &recorder{lastWrite: map[int]int{}, label: map[int]string{}, side: map[int]string{}}
}

func (rc *recorder) setLabel(lane int, what string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.label[lane] = what
}

func (rc *recorder) setSide(lane int, side string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.side[lane] = side
}

// traceFor is the synchronizer's trace hook for lane.
func (rc *recorder) traceFor(lane int) func(statesync.Attempt) {
	return func(a statesync.Attempt) {
		tr := timeline.Try{Lane: lane, N: a.N, Base: a.Base, Revision: a.Revision, HeldBack: a.HeldBack, At: time.Now()}
		switch {
		case a.Base == statesync.AnyRevision:
			tr.Base = 0
			tr.Outcome = timeline.Unconditional
		case a.Carried:
			tr.Outcome = timeline.Carried
		case a.Conflict != nil:
			tr.Outcome, tr.Current, tr.CaughtUp = timeline.Refused, a.Conflict.Current, a.CaughtUp
		case a.Updates == 0:
			tr.Outcome = timeline.Confirmed
		default:
			tr.Outcome = timeline.Committed
		}
		rc.add(tr)
	}
}

// add records tr; a first try begins a new write.
func (rc *recorder) add(tr timeline.Try) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if tr.N == 1 || rc.lastWrite[tr.Lane] == 0 {
		rc.writes++
		rc.lastWrite[tr.Lane] = rc.writes
	}
	tr.Write = rc.lastWrite[tr.Lane]
	tr.What = rc.label[tr.Lane]
	if tr.What == "" {
		tr.What = "lease keeper, in the background"
	}
	tr.Section = rc.side[tr.Lane]
	rc.all = append(rc.all, tr)
}

// tries returns what was recorded so far.
func (rc *recorder) tries() []timeline.Try {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]timeline.Try(nil), rc.all...)
}
