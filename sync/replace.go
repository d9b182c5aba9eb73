package statesync

import (
	"context"
	"time"

	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Replace sets the shared state to the one fn makes of the local state, as
// one snapshot entry (which the log may split, as it does a compaction's,
// so the state may be larger than one update entry can be): readers take
// in all of it or none. Like UpdateState it lands only if the log is still
// at the revision fn's state was read at, and on a conflict it catches up
// and calls fn again, so that no other writer's change is lost. A nil
// InitialUpdate from fn writes nothing, once the state it saw is confirmed
// current. As any snapshot it drops the entries before it. It returns fn's
// result and the state just after the snapshot.
func Replace[S, R any](ctx context.Context, s *Synchronizer[S], fn func(state S) (InitialUpdate[S], R)) (R, S, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var result R
	var after revisioned[S]
	err := s.retryOnConflictLocked(ctx, func(int, time.Duration) error {
		cur := *s.local.Load()
		var init InitialUpdate[S]
		init, result = fn(cur.Value)
		if init == nil {
			after = cur.revisioned
			return s.confirmCurrentLocked(ctx, cur)
		}
		var err error
		after, err = s.replaceLocked(ctx, cur, init)
		return err
	}, nil)
	return result, after.Value, err
}

// replaceLocked writes init as a snapshot after cur and, once it lands,
// makes it the local copy and tells watchers what it changed.
func (s *Synchronizer[S]) replaceLocked(ctx context.Context, cur local[S], init InitialUpdate[S]) (revisioned[S], error) {
	data, err := s.codec.EncodeInitial(init)
	if err != nil {
		return revisioned[S]{}, err
	}
	at, err := s.log.CompactAfter(PurgedContext(turns.SpeakerContext(ctx, s.cm.ID()), cur.purgedAt), cur.position(), data)
	if err != nil {
		return revisioned[S]{}, s.replacedLocked(ctx, err)
	}
	s.combine.carried.appended(cur.Revision, at.Revision, at.ID)
	st := init.Create(at.Revision)
	next := local[S]{revisioned: revisioned[S]{Value: st, Revision: at.Revision}, initialized: true, compactedAt: at.Revision, id: at.ID, purgedAt: cur.purgedAt}
	s.local.Store(&next)
	s.notifyApplied(Applied[S]{
		Entry: Entry{Position: at, Snapshot: true, Data: data, Time: time.Now()},
		Local: true, Before: cur.Value, After: st, HasStates: true,
	})
	return next.revisioned, nil
}
