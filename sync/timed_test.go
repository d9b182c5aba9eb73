package statesync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// stamped is a state that records the log's time of the last stamp entry.
type stamped struct {
	at    time.Time
	count int
}

type stamp struct{}

func (stamp) Apply(s stamped, _ uint64) stamped { return stamp{}.ApplyAt(s, 0, time.Time{}) }
func (stamp) ApplyAt(s stamped, _ uint64, at time.Time) stamped {
	return stamped{at: at, count: s.count + 1}
}

type plain struct{}

func (plain) Apply(s stamped, _ uint64) stamped { s.count++; return s }

type stampStart struct{}

func (stampStart) Create(uint64) stamped { return stamped{} }

type stampCodec struct{}

func (stampCodec) EncodeUpdates(us []statesync.Update[stamped]) ([]byte, error) {
	b := make([]byte, len(us))
	for i, u := range us {
		if _, ok := u.(stamp); ok {
			b[i] = 's'
		} else {
			b[i] = 'p'
		}
	}
	return b, nil
}

func (stampCodec) DecodeUpdates(data []byte) ([]statesync.Update[stamped], error) {
	var us []statesync.Update[stamped]
	for _, c := range data {
		switch c {
		case 's':
			us = append(us, stamp{})
		case 'p':
			us = append(us, plain{})
		default:
			return nil, errors.New("bad")
		}
	}
	return us, nil
}

func (stampCodec) EncodeInitial(statesync.InitialUpdate[stamped]) ([]byte, error) {
	return []byte("start"), nil
}

func (stampCodec) DecodeInitial([]byte) (statesync.InitialUpdate[stamped], error) {
	return stampStart{}, nil
}

// A timed update gets the time the log stored its entry, both when a writer
// appends it (it reads the entry back: an append does not say the time) and
// when a reader replays it; watchers hear the writer's own entry as local,
// with the states around it.
func TestTimedUpdateGetsTheLogsTime(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("timed")
	logTime := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	log.SetClock(func() time.Time { return logTime })
	var heard []statesync.Applied[stamped]
	w := statesync.New[stamped](log, stampCodec{}, statesync.WithApplied(func(a statesync.Applied[stamped]) { heard = append(heard, a) }))
	if err := w.Initialize(ctx, stampStart{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := statesync.UpdateState(ctx, w, func(stamped) ([]statesync.Update[stamped], int) {
		return []statesync.Update[stamped]{plain{}, stamp{}}, 0
	}); err != nil {
		t.Fatal(err)
	}
	st, rev := w.State()
	if !st.at.Equal(logTime) || st.count != 2 || rev != 2 {
		t.Fatalf("the writer's state after a timed update: %+v", st)
	}
	if len(heard) != 1 || !heard[0].Local || !heard[0].HasStates || heard[0].Before.count != 0 || heard[0].After.count != 2 {
		t.Fatalf("watchers heard %+v", heard)
	}
	r := statesync.New[stamped](log, stampCodec{})
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.State(); !got.at.Equal(logTime) || got.count != 2 {
		t.Fatalf("a reader's replay: %+v", got)
	}
}

// An entry's Time is the log's clock or zero: an entry a writer applies
// without reading it back is heard with no time, never the writer's clock.
// What the log's clock said is known from reads alone (LastLogTime): the
// time of the newest entry read, a writer's read-back included.
func TestEntryTimeIsTheLogsOrZero(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("times")
	logTime := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	log.SetClock(func() time.Time { return logTime })
	var heard []statesync.Applied[stamped]
	w := statesync.New[stamped](log, stampCodec{}, statesync.WithApplied(func(a statesync.Applied[stamped]) { heard = append(heard, a) }))
	if err := w.Initialize(ctx, stampStart{}); err != nil {
		t.Fatal(err)
	}
	write := func(u statesync.Update[stamped]) {
		t.Helper()
		if _, _, err := statesync.UpdateState(ctx, w, func(stamped) ([]statesync.Update[stamped], int) {
			return []statesync.Update[stamped]{u}, 0
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(plain{})
	if len(heard) != 1 || !heard[0].Local || !heard[0].Time.IsZero() {
		t.Fatalf("a plain update applied without reading it back was heard as %+v", heard)
	}
	logTime = logTime.Add(time.Minute)
	write(stamp{})
	if stored, _ := w.LastLogTime(); !stored.Equal(logTime) {
		t.Fatalf("after reading back its timed update, the writer saw the log's clock at %v, not %v", stored, logTime)
	}

	r := statesync.New[stamped](log, stampCodec{})
	if stored, seen := r.LastLogTime(); !stored.IsZero() || !seen.IsZero() {
		t.Fatal("a reader that read nothing knows the log's clock")
	}
	logTime = logTime.Add(time.Minute)
	write(plain{})
	before := time.Now()
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if stored, seen := r.LastLogTime(); !stored.Equal(logTime) || seen.Before(before) {
		t.Fatalf("a reader saw the log's clock at %v (at %v), not %v after %v", stored, seen, logTime, before)
	}
}

// UpdateUnconditionally returns the state just after its own entry, even
// when another read of the synchronizer took that entry in first with a
// later one: a timed update's effect is judged by its entry alone.
func TestUnconditionalReturnsTheStateAtItsEntry(t *testing.T) {
	ctx := context.Background()
	log := &thenAfterAppend{Log: memlog.New("own")}
	w := statesync.New[stamped](log, stampCodec{})
	if err := w.Initialize(ctx, stampStart{}); err != nil {
		t.Fatal(err)
	}
	other := statesync.New[stamped](log.Log, stampCodec{})
	log.then = func() {
		if _, err := other.UpdateUnconditionally(ctx, plain{}); err != nil {
			t.Error(err)
		}
		if err := w.Fetch(ctx); err != nil { // takes in both entries
			t.Error(err)
		}
	}
	after, err := w.UpdateUnconditionally(ctx, stamp{})
	if err != nil {
		t.Fatal(err)
	}
	if after.count != 1 {
		t.Errorf("UpdateUnconditionally returned %+v; want the state after its entry (revision 2): count 1", after)
	}
	if now, rev := w.State(); rev != 3 || now.count != 2 {
		t.Errorf("the local copy is %+v at %d; want both entries", now, rev)
	}
}

// thenAfterAppend is a log that calls then, once, after the next append
// lands and before its writer hears of it.
type thenAfterAppend struct {
	*memlog.Log
	then func()
}

func (l *thenAfterAppend) AppendAfter(ctx context.Context, last statesync.Position, data []byte) (statesync.Position, error) {
	at, err := l.Log.AppendAfter(ctx, last, data)
	if then := l.then; then != nil && err == nil {
		l.then = nil
		then()
	}
	return at, err
}
