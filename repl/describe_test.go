package repl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/sharedconfig"
	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/turns"
)

// A write starved by other writers is not blamed on the server.
func TestDescribeStarvedWrite(t *testing.T) {
	err := fmt.Errorf("put: %w", &turns.ContendedError{Lost: 674, Err: fmt.Errorf("SC_x: the server did not answer in time: %w", context.DeadlineExceeded)})
	got := describeError(err, 5*time.Second)
	want := "gave up after losing 674 tries in a row to other writers within 5s (the server is answering; try again, or use a longer --timeout)"
	if got != want {
		t.Fatalf("describeError = %q\nwant %q", got, want)
	}
}

func TestDescribeWriteThatLostOnce(t *testing.T) {
	err := &turns.ContendedError{Lost: 1, Err: context.Canceled}
	if got, want := describeError(err, 5*time.Second), "gave up after losing its one try to another writer (context canceled)"; got != want {
		t.Fatalf("describeError = %q\nwant %q", got, want)
	}
}

// A write whose time ran out while it held back for other writers' turns
// (forged words can make it) is not blamed on the server either.
func TestDescribeWriteCutShortWhileHoldingBack(t *testing.T) {
	err := fmt.Errorf("put: %w", &turns.ContendedError{HeldBack: 987 * time.Millisecond, Err: context.DeadlineExceeded})
	got := describeError(err, time.Second)
	want := "gave up after holding back 987ms for older writers' turns within 1s (the server is answering; try again, or use a longer --timeout)"
	if got != want {
		t.Fatalf("describeError = %q\nwant %q", got, want)
	}
}

// TRACE says how long a try waited for older writers' turns, when it did,
// and when another writer's entry carried the write (combining).
func TestDescribeAttemptThatHeldBack(t *testing.T) {
	for _, tc := range []struct {
		a    statesync.Attempt
		want string
	}{
		{statesync.Attempt{N: 1, Base: 7, Updates: 1, Revision: 8}, ".... try 1 on revision 7: committed at revision 8"},
		{statesync.Attempt{N: 2, Base: 7, Updates: 1, Revision: 9, HeldBack: 3 * time.Millisecond}, ".... try 2 on revision 7, after 3ms waiting for older writers' turns: committed at revision 9"},
		{statesync.Attempt{N: 1, Base: 9, Updates: 1, Conflict: &statesync.ConflictError{Current: 12}, CaughtUp: 9, Stopped: true}, ".... try 1 on revision 9: conflict, the stream is at revision 12; caught up to revision 9, then stopped"},
		{statesync.Attempt{N: 3, Base: 9, Revision: 11, HeldBack: 2 * time.Millisecond, Carried: true}, ".... handed on revision 9 to the writer under way, whose entry at revision 11 carries it (checked): done"},
	} {
		if got := describeAttempt(tc.a); got != tc.want {
			t.Errorf("describeAttempt(%+v) = %q\nwant %q", tc.a, got, tc.want)
		}
	}
}

// A PUT handed to another writer (combining) whose time ran out while it
// held back, or whose own try was then not sent, may still have landed:
// the line says so, not only why it stopped. (A one-shot put stopped by
// SIGINT said "gave up after holding back 4ms for older writers' turns
// (context canceled)", exit 1, for a PUT that landed: 2 to 5 in 100.)
func TestDescribeHandedWriteThatGaveUp(t *testing.T) {
	for _, stopped := range []error{
		&turns.ContendedError{HeldBack: 4 * time.Millisecond, Err: context.Canceled},
		&turns.ContendedError{Lost: 1, Err: errors.New("SC_x: context canceled: the write was not sent, so nothing was changed")},
		&turns.ContendedError{Lost: 3, Err: context.DeadlineExceeded},
	} {
		err := fmt.Errorf("%w: the write was handed to writer w1, which may still commit it (up to revision 70): %w", statesync.ErrUnknownOutcome, stopped)
		if got := describeError(err, 5*time.Second); !strings.HasPrefix(got, "gave up after ") || !strings.Contains(got, ", but the change may or may not have been made; REFRESH, then look (") {
			t.Errorf("describeError(%v) = %q, want the change may or may not have been made", err, got)
		}
	}
}

// Follow mode shows an entry of several operations, as combining makes
// them, each operation with its own arguments and who handed it.
func TestDescribeChangeLinePairsEachOperationWithItsArguments(t *testing.T) {
	ch := sharedconfig.Change{Ops: []sharedconfig.Op{
		{Kind: "put", Key: "a", Value: "1"},
		{Kind: "put", Key: "b", Value: "2", HandedBy: "bob"},
		{Kind: "remove", Key: "c"},
	}}
	if got, want := describeChangeLine(ch), "PUT a , 1; PUT b , 2 (handed by bob); REMOVE c"; got != want {
		t.Errorf("describeChangeLine = %q, want %q", got, want)
	}
	ch.Ops = append(ch.Ops, sharedconfig.Op{Kind: "clear"})
	if got, want := describeChangeLine(ch), "PUT a , 1; PUT b , 2 (handed by bob); REMOVE c; ... and 1 more (4 operations)"; got != want {
		t.Errorf("describeChangeLine of 4 = %q, want %q", got, want)
	}
}
