package sharedconfig

import (
	"iter"
	"strings"
	"sync"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Watch calls fn with each change to keys that start with prefix as the
// local copy takes it in, and keeps the local copy current in the
// background (it follows the log), until stop is called. onError, if set,
// hears of background reads that failed, and of the config destroyed under
// this process (statesync.ErrDeleted, ErrReplaced); the watch goes on.
// It is the one way to hear changes.
//
// Changes this process makes come too, with Local set. The empty prefix
// is the whole config: fn hears every entry the copy takes in, as it is
// (lease operations, a snapshot as the state it holds, an entry another
// program wrote with Foreign set).
//
// With a prefix, each Change is narrowed to its operations on keys under
// prefix; an operation with no key (CLEAR) shows when there were keys
// under prefix for it to remove. Entries that change nothing under prefix
// are not reported. A snapshot the local copy caught up through (another
// process compacted history this one had not read) comes as one Change
// with Snapshot set, Properties the keys it holds under prefix (State is
// all it holds), and Ops the puts and removes it implies there; a snapshot
// that changes nothing there is not reported.
//
// fn runs while the local copy is being updated: it must not call back into
// the Config or call stop. Once stop returns, fn is not called again.
// Several watches may run at once; each follows the log on its own.
func (c *Config) Watch(prefix string, fn func(Change), onError func(error)) (stop func(), err error) {
	w := &watcher{prefix: prefix, fn: fn}
	c.watchMu.Lock()
	// Counted before the copy is read: the hook, which skips its work while
	// nobody watches, then hears of an entry stored after that read, and the
	// synchronizer tells it of an entry only once State shows it.
	c.watching.Add(1)
	// Entries up to the copy's revision are in seen.
	w.seen, w.from = c.sync.State()
	if c.watchers == nil {
		c.watchers = map[*watcher]struct{}{}
	}
	c.watchers[w] = struct{}{}
	c.watchMu.Unlock()
	unregister := func() {
		c.watchMu.Lock()
		delete(c.watchers, w)
		c.watching.Add(-1)
		c.watchMu.Unlock()
	}
	stopFollow, err := c.sync.Follow(onError)
	if err != nil {
		unregister()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			stopFollow()
			unregister()
		})
	}, nil
}

// watcher is one Watch: its prefix, its callback, and the state as of the
// last entry it took in, which a snapshot is compared with.
type watcher struct {
	prefix string
	fn     func(Change)
	seen   State
	from   uint64
}

// applied is the synchronizer's hook: every entry the local copy takes in,
// in order, once reads show it.
func (c *Config) applied(a statesync.Applied[State]) {
	if c.watching.Load() == 0 {
		return
	}
	if named, ok := c.log.(interface{ Writer() string }); ok && a.Local && a.Writer == "" {
		a.Writer = named.Writer() // an entry this process appended, not read back
	}
	ch := changeWithLeases(a)
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if len(c.watchers) == 0 {
		return
	}
	// After the last entry of a read the watchers' state is the copy's:
	// share it, rather than keep a copy of every node they applied.
	st, rev := c.sync.State()
	for w := range c.watchers {
		w.take(a, ch)
		if rev == w.from {
			w.seen = st
		}
	}
}

// take tells w of one entry, narrowed to its prefix. Entries come in
// order, each once; a snapshot at or below the last revision taken starts
// another incarnation of the log (the config destroyed and created again,
// its revisions from 1), which the copy reloaded: it is taken, and a
// prefix watch compares it with what it saw of the old one.
func (w *watcher) take(a statesync.Applied[State], ch Change) {
	if a.Revision <= w.from && !a.Entry.Snapshot {
		return
	}
	w.from = a.Revision
	switch {
	case w.prefix == "":
		w.fn(ch)
		return
	case a.Foreign != "":
		return
	case a.Entry.Snapshot:
		ch.Ops = diffUnder(w.seen, a.After, w.prefix)
		for i := range ch.Ops {
			ch.Ops[i].Local = ch.Local
		}
		ch.Properties = countUnder(a.After, w.prefix)
		w.seen = a.After
	default:
		ch.Ops = opsUnder(ch.Ops, w.seen, w.prefix)
		ch.Ended, ch.Ops = endedUnder(ch.Ended, ch.Ops, a, w.prefix)
		if a.HasStates {
			w.seen = a.After // exact, timed updates included
			break
		}
		for _, u := range a.Updates {
			w.seen = applyAt(w.seen, u, a.Revision, a.Time)
		}
	}
	if len(ch.Ops) > 0 {
		w.fn(ch)
	}
}

// opsUnder keeps the ops that touch keys under prefix: those on such a key,
// and those on no key (a CLEAR) when before holds a key under prefix or an
// earlier op of the entry put one there.
func opsUnder(ops []Op, before State, prefix string) []Op {
	var kept []Op
	for _, op := range ops {
		switch {
		case op.Kind != "clear" && op.Key == "": // a lease operation: see endedUnder
		case op.Key != "" && strings.HasPrefix(op.Key, prefix),
			op.Key == "" && (len(kept) > 0 || anyUnder(before, prefix)):
			kept = append(kept, op)
		}
	}
	return kept
}

func anyUnder(s State, prefix string) bool {
	for range s.WithPrefix(prefix) {
		return true
	}
	return false
}

func countUnder(s State, prefix string) int {
	n := 0
	for range s.WithPrefix(prefix) {
		n++
	}
	return n
}

// diffUnder is the puts and removes that turn before into after, for keys
// under prefix, in key order. A key set again to the same value at another
// revision counts as a put.
func diffUnder(before, after State, prefix string) []Op {
	nextOld, stopOld := iter.Pull2(before.WithPrefix(prefix))
	defer stopOld()
	nextNew, stopNew := iter.Pull2(after.WithPrefix(prefix))
	defer stopNew()
	var ops []Op
	oldKey, oldProp, hasOld := nextOld()
	newKey, newProp, hasNew := nextNew()
	for hasOld || hasNew {
		switch {
		case hasOld && (!hasNew || oldKey < newKey): // gone
			ops = append(ops, Op{Kind: "remove", Key: oldKey})
			oldKey, oldProp, hasOld = nextOld()
		case hasNew && (!hasOld || newKey < oldKey): // new
			ops = append(ops, Op{Kind: "put", Key: newKey, Value: newProp.Value})
			newKey, newProp, hasNew = nextNew()
		default: // in both
			if oldProp != newProp {
				ops = append(ops, Op{Kind: "put", Key: newKey, Value: newProp.Value})
			}
			oldKey, oldProp, hasOld = nextOld()
			newKey, newProp, hasNew = nextNew()
		}
	}
	return ops
}
