package statesync

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Log is the storage a Synchronizer works on: an append-only sequence of
// entries with a conditional append. Implementations must be safe for
// concurrent use.
//
// A log may be deleted and created again under the same name, as a
// JetStream stream can. The new incarnation numbers its entries from 1
// again, so a revision alone cannot say which entry it is; an ID can. The
// methods that take a Position bind what they do to its ID, so that state
// read from one incarnation is never written into another: if the log's
// entry at that revision is another, they do nothing and return an error
// wrapping ErrReplaced. A Position with no ID binds nothing (the first
// write to a log, or a log that gives its entries no IDs). A method whose
// context ended while the log said nothing returns an error wrapping
// ErrNoAnswer, where the log can tell.
type Log interface {
	// Name identifies the log in error messages.
	Name() string

	// AppendAfter adds an update entry if and only if the log's last entry
	// is last, and returns the new entry's position. If the log has moved
	// on it returns a *ConflictError (errors.Is(err, ErrConflict)) and
	// appends nothing. So it does, also a *ConflictError, when last has an
	// ID and the log no longer holds that entry (a purge removed it, see
	// ReadAfter): an update there would follow no state. With
	// last.Revision == AnyRevision the append is unconditional. An append
	// must take effect at most once, even when the implementation retries
	// after an ambiguous failure.
	AppendAfter(ctx context.Context, last Position, data []byte) (Position, error)

	// CompactAfter appends a snapshot entry on the condition of AppendAfter,
	// and drops every entry before the snapshot. It returns the snapshot's
	// position. Readers never see a partial snapshot.
	CompactAfter(ctx context.Context, last Position, snapshot []byte) (Position, error)

	// ReadAfter calls fn, in order, for the entries with after.Revision <
	// Revision <= upTo, once it has made sure that the entry at
	// after.Revision, if the log still holds it, is after. Where compaction
	// has removed entries in that range, reading resumes at the snapshot
	// that covers them, so the first entry fn sees after a gap is a
	// snapshot. A gap followed by an update (entries removed with no
	// snapshot in their place, and newer ones kept, as a purge by hand that
	// keeps some does) is an *EntryError for that update wrapping
	// ErrStateGone; so is an update first after after, when after has an ID
	// and the log no longer holds that entry (compaction would have left a
	// snapshot first). An Unconditional update there holds no state, and is
	// skipped, as what follows it decides. A gap
	// followed by nothing (every entry from there to the log's end was
	// removed, with no snapshot in their place, as a purge by hand does)
	// holds no state: the read returns an error wrapping ErrEmptied, at
	// once, rather than wait for entries that will not come. So does a read
	// whose after has an ID when neither that entry nor any after it is
	// left, even one up to after.Revision: a copy at the log's end then
	// learns that its state is gone. Entries that
	// carry no state (for example the pieces of an unfinished snapshot)
	// may be skipped; foreign ones are delivered with
	// Entry.Foreign set, so that readers can say what they stepped over. An
	// error from fn stops the read and is returned. upTo == after.Revision
	// reads nothing; upTo < after.Revision is an error. fn may call
	// ReadAfter on the same log, and a read never waits for another read's
	// fn.
	ReadAfter(ctx context.Context, after Position, upTo uint64, fn func(Entry) error) error

	// LastPosition returns the position of the last entry appended
	// (Revision 0 for an empty log; an emptied one, see ReadAfter, still
	// ends at the revision its entries went up to), with its ID where the
	// log can say it in the same request: a copy at that entry then knows it has nothing
	// to read, and that the log is still the incarnation it read.
	LastPosition(ctx context.Context) (Position, error)

	// Notify calls fn, from another goroutine, soon after each append by
	// anyone, until stop is called. Calls may be merged or spurious: fn
	// should look at the log rather than count calls.
	Notify(fn func()) (stop func(), err error)
}

// Position is an entry's place in a log. Revisions increase by one per
// entry appended, starting at 1; compaction removes old entries but never
// renumbers the rest. The ID, when not empty, identifies the entry across
// incarnations of the log: no other entry of any incarnation has it. A
// Position with no ID binds nothing (see Log).
type Position struct {
	Revision uint64
	ID       string
}

// Entry is one record of a log, at its Position.
type Entry struct {
	Position
	// Snapshot marks an initial update: it replaces all state before it.
	Snapshot bool
	Data     []byte
	// Writer names who appended the entry, if the log records it.
	Writer string
	// Time is when the log stored the entry, by the log's clock (a shared
	// log's: the server's), or zero when not known: a log that records no
	// time, or an entry this synchronizer applied without reading it back.
	Time time.Time
	// Speaker is the id the entry's writer names itself by in the words of
	// turns (package turns: its Announcer and Speaker), if the log records it.
	Speaker string
	// Foreign, when not empty, says why the entry is not one of the
	// synchronizer's (another program wrote it): it holds no state, and
	// readers step over it. Data is then unused.
	Foreign string
	// Carried names the calls (UpdateOp) whose updates the entry carries,
	// if the log records them: see CarriedContext.
	Carried []Carried
	// Unconditional: the entry was appended with no condition
	// (AnyRevision), if the log records it. Such an entry decides nothing
	// from the state it lands on, so where the entries before it were
	// removed with no snapshot in their place it holds no state of its own:
	// readers step over it there, rather than take the state as gone.
	Unconditional bool
	// Purged, on a snapshot, is the newest revision up to which its writer
	// knew the log's entries were removed by hand with no snapshot in their
	// place (ErrEmptied), if the log records it: see PurgedContext. 0: none.
	Purged uint64
}

type purgedKey struct{}

// PurgedContext is ctx carrying the newest revision up to which the log's
// entries were purged by hand, as far as a snapshot appended under it
// knows: a log records it with the entry (Entry.Purged), so that a copy
// older than that purge, reading the snapshot, learns that its state was
// purged rather than compacted.
func PurgedContext(ctx context.Context, upTo uint64) context.Context {
	if upTo == 0 {
		return ctx
	}
	return context.WithValue(ctx, purgedKey{}, upTo)
}

// PurgedOf is what PurgedContext put in ctx.
func PurgedOf(ctx context.Context) uint64 {
	n, _ := ctx.Value(purgedKey{}).(uint64)
	return n
}

// Carried is one call an entry carries: its op's ID, and where its updates
// are among the entry's, [Start, End) (Start == End: the call decided to
// write nothing, on the state the entry was appended on). A synchronizer
// commits a call of another writer for it (combining, see UpdateOp), and
// every append of a call names it, so that no two entries carry one call.
type Carried struct {
	ID         string
	Start, End int
	// Writer is the name the writes of the writer that handed the call go
	// by (Entry.Writer), if it gave one: for display only, since anyone
	// can hand calls.
	Writer string
}

type carriedKey struct{}

// CarriedContext is ctx carrying the calls an append under it carries: a
// log records them with the entry (Entry.Carried), as it records the
// speaker (turns.SpeakerContext).
func CarriedContext(ctx context.Context, carried []Carried) context.Context {
	if len(carried) == 0 {
		return ctx
	}
	return context.WithValue(ctx, carriedKey{}, carried)
}

// CarriedOf is what CarriedContext put in ctx.
func CarriedOf(ctx context.Context) []Carried {
	c, _ := ctx.Value(carriedKey{}).([]Carried)
	return c
}

// AnyRevision as the revision of the last entry makes an append
// unconditional.
const AnyRevision = ^uint64(0)

var (
	// ErrConflict: the log was not at the expected revision.
	ErrConflict = errors.New("the log moved past the expected revision")
	// ErrUnknownOutcome: an append may or may not have landed and the log
	// cannot tell which (for example its entry was compacted away before the
	// writer could look for it). Fetch, then look at the state.
	ErrUnknownOutcome = errors.New("the append may or may not have been applied")
	// ErrReplaced: the log was deleted and created again (another
	// incarnation stands under its name) since the state was read from it.
	ErrReplaced = errors.New("the log was deleted and created again")
	// ErrTooLarge: an update entry is larger than the log takes; a snapshot
	// (Compact, Replace), which a log may split, can carry it.
	ErrTooLarge = errors.New("the entry is too large for the log")
	// ErrDeleted: the log was deleted, and nothing stands under its name.
	ErrDeleted = errors.New("the log was deleted")
	// ErrEmptied: the entries a read asked for were removed, with no
	// snapshot after them (see Log.ReadAfter): the log holds no state, as an
	// empty log, but its revisions go on from where they were.
	ErrEmptied = errors.New("the log's entries were removed, with no snapshot in their place")
	// ErrStateGone: an update follows entries that were removed with no
	// snapshot in their place, and newer entries were kept (see
	// Log.ReadAfter): the state it changes is gone, and so is every state
	// after it. Logs wrap it in an *EntryError for that update.
	ErrStateGone = errors.New("the entries before it were removed, with no snapshot in their place: the state it changes is gone")
	// ErrNoAnswer: the context ended while the log did not answer (it
	// could not be reached, or said nothing). A log wraps it only where it
	// can tell that from time that ran out on a request while the log
	// answered, so that a write that kept losing to other writers is not
	// taken for one cut off, nor the reverse.
	ErrNoAnswer = errors.New("no answer from the log")
)

// ConflictError reports a conditional append that found the log elsewhere
// than the writer expected.
type ConflictError struct {
	// Current is the log's last revision when the append was refused, or 0
	// when the log did not say.
	Current uint64
}

func (e *ConflictError) Error() string {
	if e.Current == 0 {
		return "conflict: the log has moved on"
	}
	return fmt.Sprintf("conflict: the log has moved on to revision %d", e.Current)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// EntryError is an entry that could not be used: it does not decode, or it
// stands where it cannot (an update before any initial state). The local
// state stays at the last good revision. Whoever returns one wraps it with
// the log's name.
type EntryError struct {
	Revision uint64
	Err      error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("entry %d: %v", e.Revision, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// errNotInitialized: the log holds no initial state yet. No caller acts on
// it but by reporting it: it is not exported.
var errNotInitialized = errors.New("the log holds no initial state; call Initialize first")
