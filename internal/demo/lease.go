package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
	"github.com/sharedconfig/sharedconfig/sharedconfig/lease"
	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// leaseTTL is the members' lease ttl: twice the shortest a lease may have, so
// that the run is short; the server's clock, not the speed, sets its pace.
const leaseTTL = 2 * time.Second

// member is one member's registration under /servers/.
type member struct {
	w            *writer
	lease, key   string
	address      string
	deadline     time.Time
	deadlineFrom time.Time
}

// leaseScenario: two members register under /servers/, one dies, and the watcher
// sees its lease expire, written by the survivor and decided by the
// server's timestamp on the expiry entry.
func leaseScenario(ctx context.Context, r *run) error {
	config := r.newConfig("lease")
	r.say("Scenario lease: members register under /servers/ with leases of %s on %s/%s; one dies.", leaseTTL, r.o.Scope, config)
	r.say("A lease's deadline is in the server's time: the time the server stored the entry that set it.")
	watcher, err := r.open(ctx, config, "watcher", openOptions{})
	if err != nil {
		return err
	}
	seen := &watchLog{config: r.o.Scope + "/" + config, changed: make(chan struct{}, 1)}
	stopWatch, err := watcher.cfg.Watch("/servers/", seen.add, seen.failed)
	if err != nil {
		return err
	}
	defer stopWatch()
	var members []*member
	for i, name := range []string{"alice", "bob"} {
		w, err := r.open(ctx, config, name, openOptions{})
		if err != nil {
			return err
		}
		members = append(members, &member{w: w, lease: "/servers/" + name, key: fmt.Sprintf("/servers/%d", i+1), address: fmt.Sprintf("10.0.0.%d:8000", i+1)})
	}
	if err := r.register(members); err != nil {
		return err
	}
	return r.killAndWatch(ctx, watcher, seen, members[0], members[1])
}

func (r *run) register(members []*member) error {
	if err := r.nextStep("alice and bob register and put their addresses under their leases"); err != nil {
		return err
	}
	for _, m := range members {
		what := fmt.Sprintf("REGISTER_LEASE %s , %s", m.lease, leaseTTL)
		if err := r.doTraced(m.w, what, func(ctx context.Context, c *sharedconfig.Config) (string, error) {
			_, err := c.Leases().Register(ctx, m.lease, leaseTTL)
			return fmt.Sprintf("**** Lease '%s' registered with ttl %s, held by %s", m.lease, leaseTTL, m.w.name), err
		}); err != nil {
			return err
		}
		what = fmt.Sprintf("PUT_WITH_LEASE %s , %s , %s", m.key, m.address, m.lease)
		if err := r.doTraced(m.w, what, func(ctx context.Context, c *sharedconfig.Config) (string, error) {
			_, err := c.Put(ctx, m.key, m.address, sharedconfig.WithLease(m.lease))
			return fmt.Sprintf("**** Property '%s' added with value '%s', under lease '%s'", m.key, m.address, m.lease), err
		}); err != nil {
			return err
		}
	}
	if err := r.nextStep("both keep their leases alive in the background"); err != nil {
		return err
	}
	for _, m := range members {
		m.w.stopKeep = m.w.cfg.Leases().Keep(nil)
	}
	r.say("  Each refreshes its lease a third of the ttl after the last refresh (an unconditional append),")
	r.say("  and writes the expiry of any lease it sees past its deadline.")
	time.Sleep(leaseTTL / 2) // the server's clock sets this pace, not --speed
	return nil
}

func (r *run) killAndWatch(ctx context.Context, watcher *writer, seen *watchLog, alice, bob *member) error {
	if err := r.nextStep("bob is killed: no goodbye, no revoke; his connection just closes"); err != nil {
		return err
	}
	bob.w.stop()
	if err := watcher.do("REFRESH", refresh(r)); err != nil {
		return err
	}
	l, ok := watcher.cfg.State().Lease(bob.lease)
	if !ok {
		return fmt.Errorf("the watcher does not see bob's lease %s", bob.lease)
	}
	bob.deadline, bob.deadlineFrom = l.Deadline, l.Deadline.Add(-l.TTL)
	r.say("  bob's lease %s has its deadline %s after its last refresh, by the server's clock; nobody refreshes it now.", bob.lease, l.TTL)
	if err := r.nextStep("the watcher waits for /servers/ to change"); err != nil {
		return err
	}
	ch, err := seen.waitFor(ctx, 4*leaseTTL+r.o.Timeout, func(ch sharedconfig.Change) bool { return endedLease(ch, bob.lease) != nil })
	if err != nil {
		return fmt.Errorf("waiting for bob's lease to expire: %w", err)
	}
	r.sayExpiry(ch, bob)
	r.recordLease(bob, ch)
	return r.leaveCleanly(ctx, watcher, seen, alice)
}

func (r *run) sayExpiry(ch sharedconfig.Change, bob *member) {
	ended := endedLease(ch, bob.lease)
	how := "revoked"
	if ended.Expired {
		how = "expired"
	}
	r.say("  watcher: revision %d by %s: lease %s %s, removing %s", ch.Revision, ch.Writer, bob.lease, how, strings.Join(ended.Keys, ", "))
	r.say("  Who wrote it: %s, whose keeper saw the lease past its deadline by its estimate of the server's clock.", ch.Writer)
	late := ch.Time.Sub(bob.deadline)
	verdict := "after"
	if late < 0 {
		verdict = "BEFORE"
	}
	r.say("  What decided it: the server's timestamp on that entry is %s the deadline (by %s here), so applying it ends the lease.", verdict, late.Abs().Round(time.Millisecond))
	r.say("  A client's clock only picks when to ask; an expiry stamped before the deadline would change nothing.")
}

func (r *run) recordLease(m *member, ch sharedconfig.Change) {
	ended := endedLease(ch, m.lease)
	r.res.Timeline.Leases = append(r.res.Timeline.Leases, timeline.Lease{Name: m.lease, Lane: m.w.lane, From: m.deadlineFrom, Deadline: m.deadline,
		Ended: ch.Time, EndedAt: ch.Revision, EndedBy: r.res.Timeline.LaneOf(ch.Writer), Expired: ended.Expired})
}

func (r *run) leaveCleanly(ctx context.Context, watcher *writer, seen *watchLog, alice *member) error {
	if err := r.nextStep("alice leaves cleanly: she revokes her lease, and her key goes at once"); err != nil {
		return err
	}
	alice.w.stopKeep()
	alice.w.stopKeep = nil
	if l, ok := alice.w.cfg.State().Lease(alice.lease); ok {
		alice.deadline, alice.deadlineFrom = l.Deadline, l.Deadline.Add(-l.TTL)
	}
	if err := r.doTraced(alice.w, "REVOKE_LEASE "+alice.lease, func(ctx context.Context, c *sharedconfig.Config) (string, error) {
		keys, err := c.Leases().Revoke(ctx, alice.lease)
		return fmt.Sprintf("**** Lease '%s' revoked; removed %s", alice.lease, strings.Join(keys, ", ")), err
	}); err != nil {
		return err
	}
	ch, err := seen.waitFor(ctx, r.o.Timeout, func(ch sharedconfig.Change) bool { return endedLease(ch, alice.lease) != nil })
	if err != nil {
		return err
	}
	r.say("  watcher: revision %d by %s: lease %s revoked, removing %s", ch.Revision, ch.Writer, alice.lease, strings.Join(endedLease(ch, alice.lease).Keys, ", "))
	r.recordLease(alice, ch)
	if err := watcher.do("REFRESH", refresh(r)); err != nil {
		return err
	}
	n := 0
	for range watcher.cfg.State().WithPrefix("/servers/") {
		n++
	}
	r.say("  watcher: /servers/ now holds %d keys", n)
	tape, err := r.tape(ctx, watcher)
	r.res.Timeline.Tape = tape
	return err
}

func endedLease(ch sharedconfig.Change, name string) *lease.Ended {
	for i := range ch.Ended {
		if ch.Ended[i].Name == name {
			return &ch.Ended[i]
		}
	}
	return nil
}

// watchLog keeps what a watch heard, for the scenario to wait on.
type watchLog struct {
	config  string // scope/name, as the demo's lines name it
	mu      sync.Mutex
	changes []sharedconfig.Change
	lost    error // the config was destroyed: nothing more will come
	changed chan struct{}
}

// failed is the watch's onError: a config destroyed under the demo ends
// its waits; other failures are retried by the watch.
func (wl *watchLog) failed(err error) {
	if !errors.Is(err, statesync.ErrDeleted) && !errors.Is(err, statesync.ErrReplaced) {
		return
	}
	wl.mu.Lock()
	if wl.lost == nil {
		wl.lost = err
	}
	wl.mu.Unlock()
	wl.signal()
}

func (wl *watchLog) signal() {
	select {
	case wl.changed <- struct{}{}:
	default:
	}
}

// add is the watch's callback: it must not block.
func (wl *watchLog) add(ch sharedconfig.Change) {
	wl.mu.Lock()
	wl.changes = append(wl.changes, ch)
	wl.mu.Unlock()
	wl.signal()
}

// waitFor returns the first change heard that match accepts.
func (wl *watchLog) waitFor(ctx context.Context, patience time.Duration, match func(sharedconfig.Change) bool) (sharedconfig.Change, error) {
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for {
		wl.mu.Lock()
		for _, ch := range wl.changes {
			if match(ch) {
				wl.mu.Unlock()
				return ch, nil
			}
		}
		lost := wl.lost
		wl.mu.Unlock()
		if errors.Is(lost, statesync.ErrReplaced) {
			return sharedconfig.Change{}, fmt.Errorf("%s was destroyed and created again by another process", wl.config)
		} else if lost != nil {
			return sharedconfig.Change{}, fmt.Errorf("%s was destroyed by another process", wl.config)
		}
		select {
		case <-wl.changed:
		case <-timer.C:
			return sharedconfig.Change{}, fmt.Errorf("nothing heard in %s", patience)
		case <-ctx.Done():
			return sharedconfig.Change{}, ctx.Err()
		}
	}
}
