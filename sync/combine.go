package statesync

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// Combining (docs/consistency.md, "Combining"): a call that can be
// described as data (UpdateOp) and meets contention is handed, by request
// (turns.Carrier), to the writer of the newest entry read, which commits
// it in its next entry with its own updates and answers with that entry's
// revision. The answer is a hint, as turns' words are: the call is done
// only when the log shows it.
//
// Every entry names the calls it carries (Entry.Carried: each call's op ID
// and where its updates are), whoever appended it. A call's op has an ID,
// the revision its writer's copy stood at when it was made (From) and the
// last revision it may land at (Until = From + opWindow). A writer puts a
// call in an append on base only if base < Until and no entry in (From,
// base] carries its ID, which it knows from reading those entries; an
// append is conditional on base. So no two entries carry one call, and
// one that carries it stands in (From, Until]. The writer that handed the
// call reads the entry that carries it, runs its own function on the
// state just before the call's updates there, and takes the call as done
// if that gives the same updates (its result is that run's); otherwise the
// op's ID is spent, and the call goes on with a new one. Once its copy is
// past Until with no entry carrying it, the call can land only by its own
// append. A call whose context ends after it was handed may still be
// committed: its error wraps ErrUnknownOutcome.

// OpCodec is implemented by codecs whose calls can be described as data,
// for UpdateOp.
type OpCodec[S any] interface {
	// DecodeOp turns op, as given to UpdateOp, into the function it
	// describes, which must always write (see UpdateOp). Errors must be
	// returned, never panicked: another writer hands the bytes, and
	// anyone can forge them.
	DecodeOp(op []byte) (func(S) []Update[S], error)
}

// UpdateOp is UpdateState for a call that op describes: bytes the codec's
// DecodeOp (the codec must be an OpCodec) turns into a function that does
// what fn does. With WithCombining, when it meets contention it is handed
// to the writer under way, which commits it with its own updates
// (combining, see above); fn's result is then that of its run on the state
// just before its updates in that writer's entry. Otherwise, or with no
// op, it is UpdateState. fn must not return TimedUpdates: their effect
// depends on when the entry is stored, which the writer that commits them
// would have to read back; nor may it decide to write nothing, since only
// the call's updates in an entry bind it there, so that it is never done
// twice.
func UpdateOp[S, R any](ctx context.Context, s *Synchronizer[S], fn func(state S) ([]Update[S], R), op []byte) (R, S, error) {
	var result R
	r := &request[S]{ctx: ctx, done: make(chan struct{}), turn: make(chan struct{})}
	r.run = func(state S) []Update[S] {
		var updates []Update[S]
		updates, result = fn(state)
		return updates
	}
	if s.ops != nil && len(op) > 0 && len(op) <= maxOpBytes {
		r.op = &opCall{data: op}
	}
	s.submit(r)
	if r.err != nil {
		var zero R
		var none S
		return zero, none, r.err
	}
	return result, r.after.Value, nil
}

const (
	// opWindow is how many revisions past the one its writer's copy stood
	// at a call may land at when another writer commits it: a writer
	// remembers the calls the entries it read carried for twice that.
	opWindow = 64
	// maxCarried bounds the calls of other writers one entry carries, and
	// maxHanded those a writer keeps to carry: anyone can hand calls.
	maxCarried = 15
	maxHanded  = 64
	maxOpBytes = 16 << 10
	// maxWriterName bounds the name a handed call's writer goes by.
	maxWriterName = 1024
)

// opCall is a request's op, as its writer hands it.
type opCall struct {
	data        []byte
	id          string
	from, until uint64
	fromID      string // the ID of the entry at from
	handed      bool   // handed to another writer since it got its id
	handedTo    string // the last writer it was handed to
	spent       bool   // an entry carried its id with other updates
}

// handed is a call as one writer hands it to another.
type handed struct {
	By   string `json:"by"` // the speaker id of the writer that handed it
	ID   string `json:"id"`
	From uint64 `json:"from"`
	// FromID is the ID of the entry at From: the call is carried only on
	// the log it was handed on, not on one created again under its name.
	FromID string `json:"from_id"`
	Until  uint64 `json:"until"`
	Op     []byte `json:"op"`

	answer func([]byte) // answers the writer that handed it
	writer string       // the name its writer's writes go by, if given
}

// validOpID: id is what newOpID makes, 16 hex digits. The entry that
// carries a call names its ID in a header where a comma, a colon or
// white space would make it name no call at all, the other writers' calls
// it carries included, and those could then land again.
func validOpID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for i := range len(id) {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// newOpID names a call's op.
func newOpID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// combining is a synchronizer's part in combining.
type combining[S any] struct {
	// Under the synchronizer's mu:
	carried carriedIDs             // the calls the entries read or written carried
	mine    map[string]*request[S] // this writer's calls handed out, by op ID
	// fences: this writer's calls that ended with their outcome unknown
	// while another writer could still carry them (fenceLocked).
	fences []fence

	takenMu sync.Mutex
	taken   []handed // calls other writers handed this one, oldest first

	carrying atomic.Bool // carrySoon's wait is under way
	// lastCarried: this writer's last append carried calls of others, who
	// will likely hand it their next ones. took is closed at the next
	// call handed. Under takenMu.
	lastCarried int
	took        chan struct{}

	// carryingAt is when this writer last appended or read an entry that
	// carries calls, in Unix nanoseconds (0: never).
	carryingAt atomic.Int64
}

// fence is a call of this writer's that another writer may still carry
// until its window ends: its ID, and the revision its window ends at.
type fence struct {
	id    string
	until uint64
}

// maxFences bounds the calls one entry fences; older ones are forgotten.
const maxFences = 16

// fenceLocked remembers op, whose call ended with its outcome unknown, so
// that this writer's next entry names it: an entry that names a call ends
// its window (carriable), so the call cannot land after a later write of
// its writer's, whose answer the user saw, and undo it. Until that entry
// lands, this writer's writes are not handed (handing): the entry must be
// its own.
func (s *Synchronizer[S]) fenceLocked(op *opCall) {
	c := &s.combine
	c.fences = append(c.fences, fence{id: op.id, until: op.until})
	if len(c.fences) > maxFences {
		c.fences = slices.Delete(c.fences, 0, len(c.fences)-maxFences)
	}
}

// fencesLocked names, for an entry appended on base, the calls fenced
// whose window is not over there: each with no updates of its own.
func (s *Synchronizer[S]) fencesLocked(base uint64) []Carried {
	var named []Carried
	for _, f := range s.combine.fences {
		if f.until > base {
			named = append(named, Carried{ID: f.id})
		}
	}
	return named
}

// carriedIDs remembers which calls the entries of (after, upTo] carried,
// and the IDs of the entries of [after, upTo] (the last 2*opWindow of
// them), which bind a handed call to the log it was handed on.
type carriedIDs struct {
	after, upTo uint64
	at          map[string]uint64 // op ID -> the revision of the entry that carried it
	ids         map[uint64]string // revision -> entry ID, where known
}

// saw records the entry at rev, its ID, and the calls it carried: an
// entry that does not follow the last one seen leaves nothing known
// before it.
func (k *carriedIDs) saw(rev uint64, id string, carried []Carried) {
	if rev != k.upTo+1 {
		k.reset(rev-1, "")
	}
	k.upTo = rev
	if k.at == nil {
		k.at = map[string]uint64{}
	}
	k.noteID(rev, id)
	for _, c := range carried {
		k.at[c.ID] = rev
	}
	if len(k.at) > 4*opWindow*(maxCarried+1) {
		for id, r := range k.at {
			if r+2*opWindow < rev {
				delete(k.at, id)
			}
		}
		k.after = max(k.after, rev-min(rev, 2*opWindow))
	}
}

// noteID keeps the ID of the entry at rev, and forgets the one 2*opWindow
// before it.
func (k *carriedIDs) noteID(rev uint64, id string) {
	if k.ids == nil {
		k.ids = map[uint64]string{}
	}
	if id != "" {
		k.ids[rev] = id
	}
	if rev > 2*opWindow {
		delete(k.ids, rev-2*opWindow)
	}
}

// appended records this writer's own entries in (after, rev], which
// carry no calls (a snapshot and its chunks); id is the last one's.
func (k *carriedIDs) appended(after, rev uint64, id string) {
	if k.upTo != after {
		k.reset(rev, id)
		return
	}
	k.upTo = rev
	k.noteID(rev, id)
}

// reset forgets everything: the copy moved to rev, whose entry has the ID
// id (if known), otherwise than by reading or writing the entry after the
// last one seen.
func (k *carriedIDs) reset(rev uint64, id string) {
	k.after, k.upTo = rev, rev
	clear(k.at)
	clear(k.ids)
	k.noteID(rev, id)
}

// idAt is the ID of the entry at rev, if known.
func (k *carriedIDs) idAt(rev uint64) (string, bool) {
	if rev < k.after || rev > k.upTo {
		return "", false
	}
	id, ok := k.ids[rev]
	return id, ok
}

// landed returns the revision of the entry in (from, upTo] that carried
// the call id, or 0, and whether every entry there is known.
func (k *carriedIDs) landed(id string, from uint64) (rev uint64, known bool) {
	if from < k.after {
		return 0, false
	}
	if r, ok := k.at[id]; ok && r > from {
		return r, true
	}
	return 0, true
}

// takeHanded keeps a call another writer handed this one, for its next
// append. It checks only the form: what a call does is checked when an
// append takes it.
func (s *Synchronizer[S]) takeHanded(data []byte, writer string, answer func([]byte)) {
	if len(data) > 2*maxOpBytes+256 {
		answer(nil)
		return
	}
	var h handed
	if err := json.Unmarshal(data, &h); err != nil || !validOpID(h.ID) || len(h.By) > 64 || len(h.Op) > maxOpBytes ||
		h.Until <= h.From || h.Until-h.From > opWindow {
		answer(nil)
		return
	}
	h.answer, h.writer = answer, writer
	if len(h.writer) > maxWriterName || !utf8.ValidString(h.writer) {
		// The entry could not name it: a header that does not read
		// names none of the calls it carries.
		h.writer = ""
	}
	c := &s.combine
	c.takenMu.Lock()
	var dropped handed
	if len(c.taken) == maxHanded {
		dropped, c.taken = c.taken[0], c.taken[1:]
	}
	c.taken = append(c.taken, h)
	if c.took != nil {
		close(c.took)
		c.took = nil
	}
	c.takenMu.Unlock()
	if dropped.answer != nil {
		dropped.answer(nil)
	}
	s.carrySoon()
}

// carryDelay is how long handed calls wait for a write of this writer's
// own to carry them before it appends them on their own: a writer that
// loops takes them into its next write, which costs nobody an entry.
const carryDelay = time.Millisecond

// carryTimeout bounds an append of handed calls on their own.
const carryTimeout = 5 * time.Second

// carrySoon appends the calls other writers handed, carryDelay from now,
// if no write of this writer's takes them meanwhile: the writer they were
// handed to may have stopped writing.
func (s *Synchronizer[S]) carrySoon() {
	c := &s.combine
	if !c.carrying.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	stop, ok := s.life.track(func() { cancel(); <-done })
	if !ok {
		c.carrying.Store(false)
		cancel()
		return
	}
	go func() {
		defer stop()
		defer close(done)
		timer := time.NewTimer(carryDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		c.carrying.Store(false) // a call taken from now on waits anew
		if ctx.Err() != nil || !c.anyTaken() {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, carryTimeout)
		defer cancel()
		r := &request[S]{ctx: turns.Without(ctx), run: func(S) []Update[S] { return nil }, done: make(chan struct{}), turn: make(chan struct{}), carryOnly: true}
		s.submit(r)
	}()
}

// awaitHandsLocked waits, with the lock released, up to carryDelay for as
// many calls to be handed as this writer's last append carried: their
// writers will likely hand it their next ones, and an entry that carries
// them with this writer's own call costs less than two entries, and lets
// no writer go before the others.
func (s *Synchronizer[S]) awaitHandsLocked(ctx context.Context) {
	c := &s.combine
	c.takenMu.Lock()
	want := c.lastCarried
	c.lastCarried = 0
	c.takenMu.Unlock()
	if want == 0 {
		return
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	timer := time.NewTimer(carryDelay)
	defer timer.Stop()
	for {
		c.takenMu.Lock()
		if len(c.taken) > 0 {
			c.takenMu.Unlock()
			return
		}
		if c.took == nil {
			c.took = make(chan struct{})
		}
		took := c.took
		c.takenMu.Unlock()
		select {
		case <-took:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// handersRead is how long after an entry that carries calls a compaction
// waits, so that the writers of those calls, answered with its revision,
// read the entry before the compaction drops it: they read it within a
// millisecond or so as a rule, and one that reads it only after the
// compaction can no longer tell whether its call landed.
const handersRead = 50 * time.Millisecond

// LastCarried is when this synchronizer last appended an entry that
// carries calls other writers handed it (combining), or read one that names
// handed calls, or the zero time. A compaction drops such an entry's
// writers' only way to learn what became of their calls: a compaction
// policy may wait for a quiet moment.
func (s *Synchronizer[S]) LastCarried() time.Time {
	if at := s.combine.carryingAt.Load(); at != 0 {
		return time.Unix(0, at)
	}
	return time.Time{}
}

// letHandersReadLocked waits, with the lock released, until handersRead
// after the newest entry this writer knows of that carries calls.
func (s *Synchronizer[S]) letHandersReadLocked(ctx context.Context) {
	at := s.LastCarried()
	wait := handersRead - time.Since(at)
	if at.IsZero() || wait <= 0 {
		return
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// anyTaken: some call handed to this writer waits to be carried.
func (c *combining[S]) anyTaken() bool {
	c.takenMu.Lock()
	defer c.takenMu.Unlock()
	return len(c.taken) > 0
}

// readCombinedLocked records what entry e, read into the copy, says of
// the calls it carries. Only a combining synchronizer keeps what entries
// carried; any notes when one carried calls, for its compactions.
func (s *Synchronizer[S]) readCombinedLocked(e Entry) {
	if len(e.Carried) > 0 {
		s.combine.carryingAt.Store(time.Now().UnixNano())
	}
	if s.ops != nil {
		s.combine.carried.saw(e.Revision, e.ID, e.Carried)
	}
}

// wroteCombinedLocked records this writer's entry at at, appended on cur,
// which carries the calls carried (theirs: some of them other writers'),
// and answers the writers that handed them.
func (s *Synchronizer[S]) wroteCombinedLocked(cur local[S], at Position, carried []Carried, theirs bool) {
	if theirs {
		s.combine.carryingAt.Store(time.Now().UnixNano())
	}
	if s.ops == nil {
		return
	}
	k := &s.combine.carried
	if k.upTo != cur.Revision {
		k.reset(cur.Revision, cur.id)
	}
	k.saw(at.Revision, at.ID, carried)
	s.forgetTaken(at.Revision, carried)
}

// carryHandedLocked runs the calls other writers handed this one that an
// append on base may carry, on state, after updates of this writer's own
// that end at start, and returns their updates and what the entry is to
// say of them. Calls it can never carry are dropped, and answered so.
func (s *Synchronizer[S]) carryHandedLocked(base uint64, state S, start int) (updates []Update[S], carried []Carried) {
	c := &s.combine
	c.takenMu.Lock()
	taken := append([]handed(nil), c.taken...)
	c.takenMu.Unlock()
	seen := map[string]bool{}
	var never []string
	now := time.Now()
	for _, h := range taken {
		if len(carried) == maxCarried {
			break
		}
		if seen[h.ID] || base < h.From {
			continue // a repeat, or this writer's copy is behind its writer's
		}
		seen[h.ID] = true
		mine, ok := s.carriable(h, base, state)
		if !ok {
			never = append(never, h.ID)
			continue
		}
		for _, u := range mine {
			state = applyOne(state, u, base+1, now)
		}
		updates = append(updates, mine...)
		carried = append(carried, Carried{ID: h.ID, Start: start, End: start + len(mine), Writer: h.writer})
		start += len(mine)
	}
	s.refuseTaken(never)
	return updates, carried
}

// carriable runs the handed call h on state, for an append on base, and
// returns its updates, or false if no append of this writer's can carry
// it: its window is over, an entry carried it already, or this copy began
// after its window did (so it cannot know), or it was handed on another
// incarnation of the log, or it is not a call the codec knows, or writes
// nothing, or what it writes does not encode.
func (s *Synchronizer[S]) carriable(h handed, base uint64, state S) ([]Update[S], bool) {
	if base >= h.Until {
		return nil, false
	}
	if rev, known := s.combine.carried.landed(h.ID, h.From); !known || rev != 0 {
		return nil, false
	}
	if id, ok := s.combine.carried.idAt(h.From); !ok || id != h.FromID {
		return nil, false // handed on another incarnation of the log, or this copy cannot tell
	}
	fn, err := s.ops.DecodeOp(h.Op)
	if err != nil {
		return nil, false
	}
	mine := fn(state)
	if len(mine) == 0 || anyTimed(mine) {
		// A call that writes nothing would leave no update to bind it
		// to; OpCodec describes none such.
		return nil, false
	}
	if _, err := s.codec.EncodeUpdates(mine); err != nil {
		return nil, false // else the entry, with this writer's own updates, would not encode
	}
	return mine, true
}

// refuseTaken drops the handed calls named ids, answering nothing, so
// that their writers go on at once.
func (s *Synchronizer[S]) refuseTaken(ids []string) {
	if len(ids) == 0 {
		return
	}
	c := &s.combine
	var refused []func([]byte)
	c.takenMu.Lock()
	c.taken = slices.DeleteFunc(c.taken, func(h handed) bool {
		if slices.Contains(ids, h.ID) {
			refused = append(refused, h.answer)
			return true
		}
		return false
	})
	c.takenMu.Unlock()
	for _, a := range refused {
		a(nil)
	}
}

// dropTaken drops every call other writers handed this one, answering
// nothing, and what the entries read carried: their windows are revisions
// of a log deleted (or created again, numbered from 1 again), where a
// call could otherwise land long after its writer gave up on it.
func (s *Synchronizer[S]) dropTaken() {
	c := &s.combine
	c.carried.reset(0, "")
	c.takenMu.Lock()
	taken := c.taken
	c.taken, c.lastCarried = nil, 0
	c.takenMu.Unlock()
	for _, h := range taken {
		h.answer(nil)
	}
}

// forgetTaken drops the handed calls that landed at rev, answering their
// writers with rev, and those that can land no more, answering nothing.
func (s *Synchronizer[S]) forgetTaken(rev uint64, carried []Carried) {
	ids := map[string]bool{}
	for _, c := range carried {
		ids[c.ID] = true
	}
	c := &s.combine
	var landed, over []func([]byte)
	c.takenMu.Lock()
	keep := c.taken[:0]
	for _, h := range c.taken {
		switch {
		case ids[h.ID]:
			landed = append(landed, h.answer)
		case h.Until > rev:
			keep = append(keep, h)
		default:
			over = append(over, h.answer)
		}
	}
	clear(c.taken[len(keep):])
	c.taken = keep
	c.lastCarried = len(landed)
	c.takenMu.Unlock()
	answer := strconv.AppendUint(nil, rev, 10)
	for _, a := range landed {
		a(answer)
	}
	for _, a := range over {
		a(nil)
	}
}

// readyOpLocked makes r's op one that an append on base may carry, or
// that may be handed at base: it gets a new ID and window when it has none,
// when its ID was spent, or when its window ended (at or before base) with
// no entry carrying it. A call handed out keeps its ID while another
// writer may still commit it: it returns ErrUnknownOutcome when the copy
// cannot tell whether an entry carried it.
func (s *Synchronizer[S]) readyOpLocked(ctx context.Context, r *request[S], base uint64) error {
	op, c := r.op, &s.combine
	if op.id != "" && !op.spent {
		rev, known := c.carried.landed(op.id, op.from)
		if op.handed && !known && base >= op.from && s.rescanLocked(ctx, op.from, base) {
			rev, known = c.carried.landed(op.id, op.from)
			if rev != 0 {
				known = false // carried by an entry this copy did not read: it cannot say by what
			}
		}
		known = known && base >= op.from
		switch {
		case known && rev == 0 && base < op.until:
			return nil
		case op.handed && !known:
			return fmt.Errorf("%w: the write was handed to writer %s, and the entries that could carry it were not all read", ErrUnknownOutcome, op.handedTo)
		}
		// Never handed out, or carried by an entry that was not this
		// call's (settleLocked), or its window is over: a new ID.
	}
	delete(c.mine, op.id)
	op.id, op.from, op.until, op.handed, op.handedTo, op.spent = newOpID(), base, base+opWindow, false, "", false
	op.fromID = s.local.Load().id // base is the copy's revision
	return nil
}

// rescanLocked reads the entries of (from, upTo] again for the calls they
// carry, when the copy no longer knows them all (it moved otherwise than
// entry by entry: a snapshot it read after a gap, say), and reports
// whether it now does: not if some were compacted away.
func (s *Synchronizer[S]) rescanLocked(ctx context.Context, from, upTo uint64) bool {
	var k carriedIDs
	k.reset(from, "")
	errGap := errors.New("a gap")
	err := s.log.ReadAfter(ctx, Position{Revision: from}, upTo, func(e Entry) error {
		if e.Revision != k.upTo+1 {
			return errGap
		}
		k.saw(e.Revision, e.ID, e.Carried)
		return nil
	})
	if err != nil || k.upTo != upTo {
		return false
	}
	s.combine.carried = k
	return true
}

// handing is what the write of a batch of one call with an op gives turns:
// the call is handed to the writer it holds back for.
func (s *Synchronizer[S]) handing(r *request[S]) *turns.Handing {
	if r.op == nil || len(s.combine.fences) > 0 {
		return nil
	}
	return &turns.Handing{
		Hand: func(ctx context.Context, to string) <-chan []byte {
			if s.readyOpLocked(ctx, r, s.local.Load().Revision) != nil {
				return nil
			}
			data, err := json.Marshal(handed{By: s.cm.ID(), ID: r.op.id, From: r.op.from, FromID: r.op.fromID, Until: r.op.until, Op: r.op.data})
			if err != nil {
				return nil
			}
			r.op.handed, r.op.handedTo = true, to
			if s.combine.mine == nil {
				s.combine.mine = map[string]*request[S]{}
			}
			s.combine.mine[r.op.id] = r
			return s.cm.Hand(ctx, to, data)
		},
		Answered: func(ctx context.Context, answer []byte) (bool, error) {
			return s.readAnsweredLocked(ctx, r, answer)
		},
		NotTaken: func() {
			// Nobody got it, so nobody can commit it: its outcome is this
			// writer's alone again, as if it had never been handed.
			delete(s.combine.mine, r.op.id)
			r.op.handed, r.op.handedTo = false, ""
		},
	}
}

// answerReadTime bounds the read an answer asks for: an answer names an
// entry already stored, so the read is quick unless the answer is false.
const answerReadTime = 100 * time.Millisecond

// readAnsweredLocked reads the log up to the revision answer names, if
// that is near, and reports whether r was committed: only the entries
// count, so a false answer costs at most answerReadTime. A read that finds
// the log deleted, or deleted and created again, ends the write with that
// error, as a catch-up after a lost try would: the call was made on the
// old log's state, and must not land in a new one.
func (s *Synchronizer[S]) readAnsweredLocked(ctx context.Context, r *request[S], answer []byte) (bool, error) {
	rev, err := strconv.ParseUint(string(answer), 10, 64)
	cur := s.local.Load().Revision
	if r.committed || err != nil || rev <= cur || rev > r.op.until {
		return r.committed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, answerReadTime)
	defer cancel()
	// Any other error leaves the copy where the read stood, and the write
	// goes on.
	_, err = s.readToLocked(ctx, *s.local.Load(), rev, false)
	if errors.Is(err, ErrReplaced) || errors.Is(err, ErrDeleted) {
		return false, err
	}
	return r.committed, nil
}

// settleLocked looks, in entry e, read on the state before, for the calls
// of this writer that were handed out: a call it carries with the updates
// the call's own function makes there is done (committed, with its result
// and the state just after its updates); one it carries otherwise has its
// op's ID spent. It returns the calls done.
func (s *Synchronizer[S]) settleLocked(before S, e Entry) (settled []Carried) {
	c := &s.combine
	if len(c.mine) == 0 || len(e.Carried) == 0 || e.Snapshot || e.Foreign != "" {
		return nil
	}
	var updates []Update[S]
	decoded := false
	for _, carried := range e.Carried {
		r := c.mine[carried.ID]
		if r == nil || r.committed {
			continue
		}
		delete(c.mine, carried.ID)
		if !decoded {
			var err error
			if updates, err = s.codec.DecodeUpdates(e.Data); err != nil {
				r.op.spent = true
				continue
			}
			decoded = true
		}
		if carried.Start < 0 || carried.Start > carried.End || carried.End > len(updates) {
			r.op.spent = true
			continue
		}
		state := before
		for _, u := range updates[:carried.Start] {
			state = applyOne(state, u, e.Revision, e.Time)
		}
		mine := r.run(state)
		want, err1 := s.codec.EncodeUpdates(mine)
		got, err2 := s.codec.EncodeUpdates(updates[carried.Start:carried.End])
		if err1 != nil || err2 != nil || !bytes.Equal(want, got) {
			r.op.spent = true
			continue
		}
		for _, u := range mine {
			state = applyOne(state, u, e.Revision, e.Time)
		}
		r.committed, r.carriedUpdates, r.after = true, len(mine), revisioned[S]{Value: state, Revision: e.Revision}
		settled = append(settled, carried)
	}
	return settled
}

// flippedCalls are the calls of an entry read that local (this writer
// wrote it) does not describe (Applied.LocalUpdate): in another writer's
// entry, this writer's calls it carried (settled); in this writer's own,
// the calls it carried for others, those it names that were not this
// writer's calls handed out (settled too, while they waited).
func flippedCalls(local bool, carried, settled []Carried) []Carried {
	if !local {
		return settled
	}
	var others []Carried
	for _, c := range carried {
		if !slices.ContainsFunc(settled, func(m Carried) bool { return m.ID == c.ID }) {
			others = append(others, c)
		}
	}
	return others
}

// handedOutError is the error of a call whose context ended after it was
// handed out: another writer may still commit it, until its window ends.
func handedOutError[S any](r *request[S], err error) error {
	return fmt.Errorf("%w: the write was handed to writer %s, which may still commit it (up to revision %d): %w", ErrUnknownOutcome, r.op.handedTo, r.op.until, err)
}

// readyOpsLocked readies the ops of a batch's calls for an append on base
// (readyOpLocked).
func (s *Synchronizer[S]) readyOpsLocked(ctx context.Context, members []*request[S], base uint64) error {
	for _, m := range members {
		if m.op != nil {
			if err := s.readyOpLocked(ctx, m, base); err != nil {
				return err
			}
		}
	}
	return nil
}

// handedOut is what an entry of a batch says of its calls that were handed
// out (ends: where each one's updates end): another writer must see that
// this entry carried them. Calls never handed out go unnamed.
func handedOut[S any](members []*request[S], ends []int) (carried []Carried) {
	start := 0
	for i, m := range members {
		if m.op != nil && m.op.handed {
			carried = append(carried, Carried{ID: m.op.id, Start: start, End: ends[i]})
		}
		start = ends[i]
	}
	return carried
}

// carryLocked is the part of other writers' calls in an append on cur of
// updates: their updates, after these, and what the entry says of them.
func (s *Synchronizer[S]) carryLocked(cur local[S], members []*request[S], updates []Update[S]) ([]Update[S], []Carried) {
	c := &s.combine
	c.takenMu.Lock()
	none := len(c.taken) == 0
	c.takenMu.Unlock()
	if none || s.ops == nil || anyTimed(updates) || !onlyOps(members) {
		return nil, nil
	}
	if c.carried.upTo != cur.Revision {
		c.carried.reset(cur.Revision, cur.id)
	}
	state, now := cur.Value, time.Now()
	for _, u := range updates {
		state = applyOne(state, u, cur.Revision+1, now)
	}
	return s.carryHandedLocked(cur.Revision, state, len(updates))
}

// onlyOps: every call of the batch is one an op describes (or it has
// none of its own): an entry that holds another kind of write (a lease's,
// a conditional one) carries nobody else's, so that what it says of that
// write (a registration's revision, say) is its writer's alone.
func onlyOps[S any](members []*request[S]) bool {
	for _, m := range members {
		if m.op == nil && !m.carryOnly {
			return false
		}
	}
	return true
}

// mayStillLandLocked is err, the error of a call r with an op, wrapped in
// ErrUnknownOutcome when r was handed out and another writer may still
// commit it.
func (s *Synchronizer[S]) mayStillLandLocked(r *request[S], err error) error {
	op := r.op
	delete(s.combine.mine, op.id)
	if err == nil || !op.handed {
		return err
	}
	if errors.Is(err, ErrUnknownOutcome) {
		s.fenceLocked(op)
		return err // it says so already
	}
	if errors.Is(err, ErrReplaced) || errors.Is(err, ErrDeleted) {
		// A call is carried only on the log it was handed on (its FromID),
		// which is gone: whatever became of it there, it can land in no log
		// there is now.
		return err
	}
	rev, known := s.combine.carried.landed(op.id, op.from)
	if known && (rev != 0 || s.local.Load().Revision >= op.until) {
		return err
	}
	s.fenceLocked(op)
	return handedOutError(r, err)
}
