package statesync_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/example"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// opSetCodec describes an add to a set as data (statesync.OpCodec): the
// op is the member.
type opSetCodec struct{ example.SetCodec }

func (opSetCodec) DecodeOp(op []byte) (func(example.Set) []statesync.Update[example.Set], error) {
	m := string(op)
	return func(example.Set) []statesync.Update[example.Set] {
		return []statesync.Update[example.Set]{example.SetAdd{Member: m}}
	}, nil
}

// newOpSet is a synchronizer of a set over log whose adds may be handed.
func newOpSet(t *testing.T, log statesync.Log) (*statesync.Synchronizer[example.Set], *turns.Manager) {
	t.Helper()
	return newOpSetWith(t, log, turns.Options{FromFirstWrite: true})
}

// newOpSetWith is newOpSet with turns' options o.
func newOpSetWith(t *testing.T, log statesync.Log, o turns.Options) (*statesync.Synchronizer[example.Set], *turns.Manager) {
	t.Helper()
	m := turns.New(o)
	s := statesync.New[example.Set](log, opSetCodec{}, statesync.WithTurns(m), statesync.WithCombining())
	if err := s.Initialize(context.Background(), example.SetOf{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, m
}

// addMember adds member through s as a call that may be handed; before each of
// its first lose tries, another writer, named by, appends an add first.
func addMember(ctx context.Context, t *testing.T, log *memlog.Log, s *statesync.Synchronizer[example.Set], member string, lose int, by string) error {
	tries := 0
	_, _, err := statesync.UpdateOp(ctx, s, func(example.Set) ([]statesync.Update[example.Set], struct{}) {
		if tries++; tries <= lose {
			data, _ := opSetCodec{}.EncodeUpdates([]statesync.Update[example.Set]{example.SetAdd{Member: by + strconv.Itoa(tries)}})
			if _, err := log.AppendAfter(turns.SpeakerContext(ctx, by), statesync.Position{Revision: statesync.AnyRevision}, data); err != nil {
				t.Error(err)
			}
		}
		return []statesync.Update[example.Set]{example.SetAdd{Member: member}}, struct{}{}
	}, []byte(member))
	return err
}

// adds counts the adds of member in log.
func adds(t *testing.T, log *memlog.Log, member string) int {
	t.Helper()
	n := 0
	last, _ := log.LastPosition(context.Background())
	err := log.ReadAfter(context.Background(), statesync.Position{}, last.Revision, func(e statesync.Entry) error {
		if e.Snapshot {
			return nil
		}
		us, err := opSetCodec{}.DecodeUpdates(e.Data)
		for _, u := range us {
			if a, ok := u.(example.SetAdd); ok && a.Member == member {
				n++
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A call handed to a writer that never answers is written by its own
// writer once the wait for the answer is over; handed later to a writer
// that read that entry, it is not carried again: no call lands twice,
// however late a hand arrives.
func TestHandedCallIsNeverCarriedTwice(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("combine")
	hander, _ := newOpSet(t, log)
	holder, holderTurns := newOpSet(t, log)
	if err := addMember(ctx, t, log, holder, "h", 0, ""); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kept []byte
	stop, err := log.Take("silent", func(data []byte, _ string, _ func([]byte)) {
		mu.Lock()
		defer mu.Unlock()
		kept = data
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := addMember(ctx, t, log, hander, "x", 2, "silent"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	late := kept
	mu.Unlock()
	if late == nil {
		t.Fatal("the call was never handed to the writer that beat it")
	}
	if err := holder.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	wantLateHandRefused(t, log, holderTurns.ID(), late)
	if n := adds(t, log, "x"); n != 1 {
		t.Fatalf("the call is in the log %d times; want 1", n)
	}
}

// Answers are hints: a writer that answers every hand with a revision that
// does not carry the call (or one far past it, or not yet written) costs
// the hander a short read at most, and its call still lands once, by its
// own append.
func TestFalseAnswersDoNotFoolTheHander(t *testing.T) {
	for name, lie := range map[string]func(last uint64) string{
		"an entry that does not carry it": func(last uint64) string { return strconv.FormatUint(last, 10) },
		"an entry not yet written":        func(last uint64) string { return strconv.FormatUint(last+3, 10) },
		"far past its window":             func(last uint64) string { return "18446744073709551615" },
		"not a revision":                  func(uint64) string { return "\x00carried" },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			log := memlog.New("combine")
			hander, _ := newOpSet(t, log)
			stop, err := log.Take("liar", func(_ []byte, _ string, answer func([]byte)) {
				last, _ := log.LastPosition(ctx)
				answer([]byte(lie(last.Revision)))
			})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			began := time.Now()
			if err := addMember(ctx, t, log, hander, "x", 2, "liar"); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(began); took > time.Second {
				t.Errorf("the write took %v", took)
			}
			if n := adds(t, log, "x"); n != 1 {
				t.Fatalf("the call is in the log %d times; want 1", n)
			}
			if state, _ := hander.State(); !state.Has("x") {
				t.Error("the hander's copy does not show its write")
			}
		})
	}
}

// cancellingLog is a memlog whose reads end the context cancel ends right
// after they deliver the entry at revision at.
type cancellingLog struct {
	*memlog.Log
	mu     sync.Mutex
	at     uint64
	cancel context.CancelFunc
}

func (l *cancellingLog) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	return l.Log.ReadAfter(ctx, after, upTo, func(e statesync.Entry) error {
		err := fn(e)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.at != 0 && e.Revision == l.at {
			l.cancel()
		}
		return err
	})
}

// A handed call that another writer's entry carried is done, even if the
// write's time runs out right after the read that found it there: its
// writer must not say it failed (a user would PUT it again).
func TestCarriedCallIsDoneWhenTimeRunsOutAfterTheReadThatFoundIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancellingLog{Log: memlog.New("combine"), cancel: cancel}
	hander, _ := newOpSet(t, log)
	stop, err := log.Take("carrier", func(data []byte, _ string, answer func([]byte)) {
		var h struct{ ID string }
		if err := json.Unmarshal(data, &h); err != nil {
			t.Error(err)
		}
		// Carried, but the answer is lost: the hander finds it by reading.
		entry, _ := opSetCodec{}.EncodeUpdates([]statesync.Update[example.Set]{example.SetAdd{Member: "x"}})
		carried := statesync.CarriedContext(turns.SpeakerContext(context.Background(), "carrier"), []statesync.Carried{{ID: h.ID, Start: 0, End: 1}})
		at, err := log.AppendAfter(carried, statesync.Position{Revision: statesync.AnyRevision}, entry)
		if err != nil {
			t.Error(err)
		}
		log.mu.Lock()
		log.at = at.Revision
		log.mu.Unlock()
		answer(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	err = addMember(ctx, t, log.Log, hander, "x", 2, "carrier")
	if n := adds(t, log.Log, "x"); n != 1 {
		t.Fatalf("the call is in the log %d times; want 1", n)
	}
	if err != nil {
		t.Fatalf("the write, carried once, says: %v", err)
	}
}

// A call handed to a writer whose copy is behind it waits there for the
// copy to reach its window; if the log is then destroyed and created
// again, the call belongs to the old log: the writer must not carry it
// into the new one once that one's revisions reach the window.
func TestHandedCallIsNotCarriedIntoALogCreatedAgain(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("combine")
	carrier, carrierTurns := newOpSet(t, log)
	other, _ := newOpSet(t, log)
	if err := addMember(ctx, t, log, carrier, "c", 0, ""); err != nil {
		t.Fatal(err) // it takes calls from its first write on
	}
	for i := range 5 {
		if err := addMember(ctx, t, log, other, "o"+strconv.Itoa(i), 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := log.LastPosition(ctx)
	data, _ := json.Marshal(map[string]any{"by": "gone", "id": "00000000000000aa", "from": last.Revision, "until": last.Revision + 64, "op": []byte("old")})
	hctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	log.Hand(hctx, carrierTurns.ID(), data) // the carrier's copy is behind: it keeps the call
	time.Sleep(5 * time.Millisecond)
	log.Recreate()
	if err := addMember(ctx, t, log, carrier, "n", 0, ""); !errors.Is(err, statesync.ErrReplaced) {
		t.Fatalf("the first write on the new log says %v; want ErrReplaced", err)
	}
	if err := carrier.Initialize(ctx, example.SetOf{}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := addMember(ctx, t, log, carrier, "n"+strconv.Itoa(i), 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := adds(t, log, "old"); n != 0 {
		t.Fatalf("a call handed in the destroyed log is in the new one %d times", n)
	}
}

// slowReads is a log whose reads start late, as a loaded process's do.
type slowReads struct {
	*memlog.Log
	delay time.Duration
}

func (l slowReads) ReadAfter(ctx context.Context, after statesync.Position, upTo uint64, fn func(statesync.Entry) error) error {
	time.Sleep(l.delay)
	return l.Log.ReadAfter(ctx, after, upTo, fn)
}

// A compaction right after an entry that carries another writer's call
// waits for that writer to read it: had it dropped the entry first, the
// writer could not tell whether its call landed, and would say its
// outcome is unknown. The hander's second write is handed at once (its
// last was carried).
func TestCompactionWaitsForTheCarriedCallsWriters(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("combine")
	carrier, carrierTurns := newOpSet(t, log)
	if err := addMember(ctx, t, log, carrier, "c", 0, ""); err != nil {
		t.Fatal(err)
	}
	// A hander that never says it waits, so that no turn of its holds
	// the carrier's compaction back.
	hander, _ := newOpSetWith(t, slowReads{Log: log, delay: 10 * time.Millisecond}, turns.Options{FromFirstWrite: true, AnnounceAfter: 100})
	if err := addMember(ctx, t, log, hander, "x", 2, carrierTurns.ID()); err != nil {
		t.Fatalf("the first handed write: %v", err)
	}
	last, _ := log.LastPosition(ctx)
	compacted := make(chan error, 1)
	go func() {
		// Compact as soon as the carrier's next entry lands: the hander
		// is then still reading up to it.
		for {
			if at, _ := log.LastPosition(ctx); at.Revision > last.Revision {
				compacted <- carrier.Compact(ctx, func(s example.Set) statesync.InitialUpdate[example.Set] {
					return example.SetOf{Members: slices.Collect(s.Members())}
				})
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	if err := addMember(ctx, t, log, hander, "y", 0, ""); err != nil {
		t.Fatalf("the second handed write: %v", err)
	}
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
	if state, _ := hander.State(); !state.Has("y") {
		t.Error("the hander's copy does not show its write")
	}
}

// A call handed to a writer that no longer listens (no responders: nobody
// got it) is this writer's alone again: when it then fails, it fails as
// it is, not as "may or may not have been made" because another writer
// might still commit it. (A shell's PUT on a damaged config, after a
// script that wrote two entries back to back had exited, said so.)
func TestCallHandedToNobodyFailsAsItIs(t *testing.T) {
	log := memlog.New("combine")
	hander, _ := newOpSet(t, log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tries := 0
	_, _, err := statesync.UpdateOp(ctx, hander, func(example.Set) ([]statesync.Update[example.Set], struct{}) {
		// Each try loses to gone, a writer that takes no calls, until the
		// fifth, which gives up: well inside the window in which a writer
		// the call was handed to could still carry it.
		if tries++; tries == 5 {
			cancel()
		}
		data, _ := opSetCodec{}.EncodeUpdates([]statesync.Update[example.Set]{example.SetAdd{Member: "gone" + strconv.Itoa(tries)}})
		if _, err := log.AppendAfter(turns.SpeakerContext(context.Background(), "gone"), statesync.Position{Revision: statesync.AnyRevision}, data); err != nil {
			t.Error(err)
		}
		return []statesync.Update[example.Set]{example.SetAdd{Member: "x"}}, struct{}{}
	}, []byte("x"))
	if err == nil {
		t.Fatal("the write succeeded; want it cancelled")
	}
	if tries < 3 {
		t.Fatalf("the write made %d tries; it is handed after 2 lost", tries)
	}
	if errors.Is(err, statesync.ErrUnknownOutcome) {
		t.Fatalf("the write handed to nobody says its outcome is unknown: %v", err)
	}
	if n := adds(t, log, "x"); n != 0 {
		t.Fatalf("the call is in the log %d times; want 0", n)
	}
}

// A handed call whose answer sends its writer to read a log that was
// deleted and created again meanwhile writes nothing into the new one, as
// any write that finds its log replaced (ErrReplaced): the call was made
// on the old config's state. The carrier here answers with a revision of
// the new log, as one on that log could.
func TestHandedCallDoesNotLandInALogCreatedAgain(t *testing.T) {
	log := memlog.New("combine")
	hander, _ := newOpSet(t, log)
	ctx := context.Background()
	stop, err := log.Take("mover", func(_ []byte, _ string, answer func([]byte)) {
		log.Recreate()
		fresh := statesync.New[example.Set](log, opSetCodec{})
		defer fresh.Close()
		if err := fresh.Initialize(ctx, example.SetOf{}); err != nil {
			t.Error(err)
		}
		for i := range 6 {
			data, _ := opSetCodec{}.EncodeUpdates([]statesync.Update[example.Set]{example.SetAdd{Member: "new" + strconv.Itoa(i)}})
			if _, err := log.AppendAfter(ctx, statesync.Position{Revision: statesync.AnyRevision}, data); err != nil {
				t.Error(err)
			}
		}
		answer([]byte("7"))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	err = addMember(ctx, t, log, hander, "x", 2, "mover")
	if !errors.Is(err, statesync.ErrReplaced) || errors.Is(err, statesync.ErrUnknownOutcome) {
		t.Fatalf("the handed write, its log created again: %v, want ErrReplaced, not an unknown outcome: no log there is now can carry it", err)
	}
	if n := adds(t, log, "x"); n != 0 {
		t.Fatalf("the call made on the old log is in the new one %d times; want 0", n)
	}
}

// A call whose writer gave up on it while another writer held it (its
// outcome unknown) cannot land after that writer's next write, whose
// answer the user saw: that write's entry names the call, which ends its
// window, so a late carrier refuses it rather than undo the later write.
func TestCallGivenUpOnCannotLandAfterItsWritersNextWrite(t *testing.T) {
	ctx := context.Background()
	log := memlog.New("combine")
	hander, _ := newOpSet(t, log)
	holder, holderTurns := newOpSet(t, log)
	if err := addMember(ctx, t, log, holder, "h", 0, ""); err != nil {
		t.Fatal(err)
	}
	kept := make(chan []byte, 1)
	stop, err := log.Take("silent", func(data []byte, _ string, _ func([]byte)) {
		select {
		case kept <- data:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := addMember(short, t, log, hander, "x", 2, "silent"); !errors.Is(err, statesync.ErrUnknownOutcome) {
		t.Fatalf("the write handed to a writer that kept it ended with %v; want an unknown outcome", err)
	}
	var late []byte
	select {
	case late = <-kept:
	default:
		t.Fatal("the call was never handed")
	}
	if err := addMember(ctx, t, log, hander, "y", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := holder.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	wantLateHandRefused(t, log, holderTurns.ID(), late)
	if err := addMember(ctx, t, log, holder, "z", 0, ""); err != nil {
		t.Fatal(err)
	}
	if n := adds(t, log, "x"); n != 0 {
		t.Fatalf("the call given up on landed after its writer's next write (%d times)", n)
	}
}

// wantLateHandRefused hands late to the writer named to, which has read
// the entries that rule it out, and wants it answered with no revision.
func wantLateHandRefused(t *testing.T, log *memlog.Log, to string, late []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	answer, err := log.Hand(ctx, to, late)
	if err != nil {
		t.Fatalf("the late hand got no answer: %v", err)
	}
	if len(answer) != 0 {
		t.Errorf("the late hand was answered %q; want no revision", answer)
	}
}
