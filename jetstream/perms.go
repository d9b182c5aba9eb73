package jetstream

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/nats-io/nats.go"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// A server with authorization refuses a publish or a subscription the user
// may not make by telling the connection, apart from any request
// (-ERR 'Permissions Violation for Publish to "..."'), which nats.go hands
// to the connection's error handler; the request itself is never answered.
// So that such a request is not waited for until its timeout (and then
// taken for a server that does not answer, or a leader being elected),
// each connection a log uses gets one permWatch, chained before the error
// handler the connection had: it hears each refusal and cancels the
// requests under way that it concerns.

// PermissionError: the server refused this connection a publish or a
// subscription that sharedconfig needs (see "NATS permissions" in
// docs/operations.md). It wraps nats.ErrPermissionViolation.
type PermissionError struct {
	// Subject is the subject refused, and Subscribe whether it was a
	// subscription (else a publish).
	Subject   string
	Subscribe bool
	// Err is the refusal as nats.go reported it.
	Err error
}

func (e *PermissionError) Error() string {
	what := "publish to"
	if e.Subscribe {
		what = "subscribe to"
	}
	return fmt.Sprintf("the server does not permit this user to %s %q (docs/operations.md lists the NATS permissions sharedconfig needs)", what, e.Subject)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// ErrHandled marks an error the connection's own error handler hears that
// sharedconfig has dealt with: a refused direct get, after which reads go
// to the stream's leader, or a refusal a request under way reports as its
// error. The error is otherwise the one nats.go reported (its text, and
// errors.Is with nats.ErrPermissionViolation).
var ErrHandled = errors.New("handled by sharedconfig")

type handledError struct{ error }

func (h handledError) Unwrap() []error { return []error{h.error, ErrHandled} }

// permWatch is what a connection's refusals mean for its logs.
type permWatch struct {
	inboxPrefix string // of the connection's inboxes, where answers come

	mu     sync.Mutex
	guards map[*permGuard]struct{}
	// inbox, once set, is the refused subscription to the connection's
	// inboxes: no request of it can be answered until the connection
	// reconnects, when nats.go subscribes again (and the server says it
	// again if it still refuses).
	inbox *PermissionError

	noDirect sync.Map // stream name -> *PermissionError: its direct gets were refused

	// A refused follow (Notify) is said by the Notify, which returns it;
	// the connection's handler hears the same refusal too, before or after
	// it returns. follows are the Notifies under way, by subject, and
	// unheard the refusals they returned that the handler has yet to
	// hear: both mark the handler's copy handled, so it is said once.
	follows map[string][]*pendingFollow
	unheard map[string]int
}

// pendingFollow is a Notify under way; refused is set if the handler
// heard its subscription refused first. heard is every error the handler
// heard while it was under way, in order; news says heard grew.
type pendingFollow struct {
	subject string
	refused *PermissionError
	heard   []error
	news    chan struct{}
}

// permGuard is a request under way: cancel ends it when the server refuses
// a publish to a subject match accepts, or the connection's inboxes.
type permGuard struct {
	match  func(subject string) bool
	cancel context.CancelCauseFunc
}

// watches holds each connection's permWatch, without keeping the
// connection alive.
var watches sync.Map // weak.Pointer[nats.Conn] -> *permWatch

// watchPermissions returns nc's permWatch, chaining it before nc's error
// handler the first time.
func watchPermissions(nc *nats.Conn) *permWatch {
	key := weak.Make(nc)
	if w, ok := watches.Load(key); ok {
		return w.(*permWatch)
	}
	inbox := nc.NewInbox()
	w := &permWatch{inboxPrefix: inbox[:strings.LastIndexByte(inbox, '.')+1], guards: map[*permGuard]struct{}{}}
	if got, loaded := watches.LoadOrStore(key, w); loaded {
		return got.(*permWatch)
	}
	runtime.AddCleanup(nc, func(key weak.Pointer[nats.Conn]) { watches.Delete(key) }, key)
	// nats.go subscribes again on a reconnect: a refused inbox may be
	// granted by then.
	prevReconnect := nc.ReconnectHandler()
	nc.SetReconnectHandler(func(c *nats.Conn) {
		w.mu.Lock()
		w.inbox = nil
		w.mu.Unlock()
		if prevReconnect != nil {
			prevReconnect(c)
		}
	})
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		if w.heard(err) {
			err = handledError{err}
		}
		if prev != nil {
			prev(c, sub, err)
		}
	})
	return w
}

// violation reads the server's refusal as nats.go reports it.
var violation = regexp.MustCompile(`Permissions Violation for (Publish|Subscription) to "([^"]+)"`)

// directGetPrefix starts the subjects of direct gets; the stream's name
// comes next.
const directGetPrefix = "$JS.API.DIRECT.GET."

// heard takes in an error the server reported on the connection, and
// reports whether it dealt with it.
func (w *permWatch) heard(err error) bool {
	refused := readRefusal(err)
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.followsHearLocked(err) // once what err means is marked
	if refused == nil {
		return false
	}
	handled := false
	if stream, ok := strings.CutPrefix(refused.Subject, directGetPrefix); ok && !refused.Subscribe {
		stream, _, _ = strings.Cut(stream, ".")
		w.noDirect.Store(stream, refused)
		handled = true
	}
	toInbox := refused.Subscribe && strings.HasPrefix(refused.Subject, w.inboxPrefix)
	if refused.Subscribe && w.followHeardLocked(refused) {
		handled = true
	}
	if toInbox {
		w.inbox = refused
	}
	for g := range w.guards {
		if toInbox || !refused.Subscribe && g.match(refused.Subject) {
			g.cancel(refused)
			handled = true
		}
	}
	return handled
}

// readRefusal is err as the refusal of a publish or a subscription, or nil
// if it is none.
func readRefusal(err error) *PermissionError {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	m := violation.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	return &PermissionError{Subject: m[2], Subscribe: m[1] == "Subscription", Err: err}
}

// followsHearLocked tells the Notifies under way that the handler heard err.
func (w *permWatch) followsHearLocked(err error) {
	for _, ps := range w.follows {
		for _, p := range ps {
			p.heard = append(p.heard, err)
			select {
			case p.news <- struct{}{}:
			default:
			}
		}
	}
}

// heardUpTo waits, for up to d, until the handler has heard last while the
// Notify p was under way, and reports whether it has. nats.go hands the
// handler the errors in the order it got them, so by then the handler has
// heard every error before last too.
func (w *permWatch) heardUpTo(p *pendingFollow, last error, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		w.mu.Lock()
		heard := slices.ContainsFunc(p.heard, func(e error) bool { return sameError(e, last) })
		w.mu.Unlock()
		if heard {
			return true
		}
		select {
		case <-p.news:
		case <-timer.C:
			return false
		}
	}
}

// sameError reports whether a and b are the same error value: nats.go
// makes a new one for each error the server reports.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// followStarts marks a Notify on subject under way, before it subscribes.
func (w *permWatch) followStarts(subject string) *pendingFollow {
	p := &pendingFollow{subject: subject, news: make(chan struct{}, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.follows == nil {
		w.follows, w.unheard = map[string][]*pendingFollow{}, map[string]int{}
	}
	w.follows[p.subject] = append(w.follows[p.subject], p)
	return p
}

// followChecked ends the Notify p, which found its subscription refused
// (found) or not, and returns the refusal it says: the one the handler
// heard first, or found (which the handler will hear later).
func (w *permWatch) followChecked(p *pendingFollow, found *PermissionError) *PermissionError {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.follows[p.subject] = slices.DeleteFunc(w.follows[p.subject], func(q *pendingFollow) bool { return q == p })
	if len(w.follows[p.subject]) == 0 {
		delete(w.follows, p.subject)
	}
	if p.refused != nil {
		return p.refused
	}
	if found != nil {
		w.unheard[p.subject]++
	}
	return found
}

// followHeardLocked reports whether a Notify says the refused subscription:
// one under way, or one that returned it already.
func (w *permWatch) followHeardLocked(refused *PermissionError) bool {
	for _, p := range w.follows[refused.Subject] {
		if p.refused == nil {
			p.refused = refused
			return true
		}
	}
	if w.unheard[refused.Subject] > 0 {
		w.unheard[refused.Subject]--
		return true
	}
	return false
}

// guard returns ctx, cancelled with a *PermissionError as its cause if the
// server refuses the connection a publish to a subject match accepts, or
// its inboxes, until release.
func (w *permWatch) guard(ctx context.Context, match func(subject string) bool) (guarded context.Context, release func()) {
	guarded, cancel := context.WithCancelCause(ctx)
	g := &permGuard{match: match, cancel: cancel}
	w.mu.Lock()
	if w.inbox != nil {
		cancel(w.inbox)
	} else {
		w.guards[g] = struct{}{}
	}
	w.mu.Unlock()
	return guarded, func() {
		w.mu.Lock()
		delete(w.guards, g)
		w.mu.Unlock()
		cancel(nil)
	}
}

// directRefusal is the server's refusal of a direct get on stream to this
// connection, or nil.
func (w *permWatch) directRefusal(stream string) *PermissionError {
	if refused, ok := w.noDirect.Load(stream); ok {
		return refused.(*PermissionError)
	}
	return nil
}

// refusal is the refusal that cancelled ctx (a guard's), or nil.
func refusal(ctx context.Context) *PermissionError {
	var refused *PermissionError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &refused) {
		return refused
	}
	return nil
}

// refusedOr is the refusal that cancelled ctx, if err (the error of a
// request under ctx) is not nil and there is one; else err.
func refusedOr(ctx context.Context, err error) error {
	if refused := refusal(ctx); err != nil && refused != nil {
		return refused
	}
	return err
}

// guard is permWatch.guard for the requests about the log's stream: its
// subject and the JetStream API's subjects that name the stream, other
// than direct gets, which reads do without when refused.
func (l *Log) guard(ctx context.Context) (context.Context, func()) {
	return l.perms.guard(ctx, l.concerns)
}

func (l *Log) concerns(subject string) bool {
	return subject == l.subject || aboutStream(subject, l.name)
}

// aboutStream reports whether subject is that of a JetStream API request
// about stream (its name is one of the subject's tokens), other than a
// direct get.
func aboutStream(subject, stream string) bool {
	api, ok := strings.CutPrefix(subject, "$JS.API.")
	return ok && !strings.HasPrefix(subject, directGetPrefix) &&
		(strings.HasSuffix(api, "."+stream) || strings.Contains(api, "."+stream+"."))
}

// guardAPI is permWatch.guard on nc's watch, for a call whose JetStream API
// requests match accepts.
func guardAPI(ctx context.Context, nc *nats.Conn, match func(subject string) bool) (guarded context.Context, release func()) {
	return watchPermissions(nc).guard(ctx, match)
}

// isSubject returns a match for subject alone.
func isSubject(subject string) func(string) bool {
	return func(s string) bool { return s == subject }
}

// orRefused is err, or, if the server refused a request under ctx (a
// guard's), that refusal: with err, if err is an unknown outcome (a write
// sent before its answer was refused).
func (l *Log) orRefused(ctx context.Context, err error) error {
	refused, said := refusal(ctx), (*PermissionError)(nil)
	switch {
	case err == nil || refused == nil || errors.As(err, &said):
		return err
	case errors.Is(err, statesync.ErrUnknownOutcome):
		return fmt.Errorf("%w (%w)", err, refused)
	}
	return fmt.Errorf("%s: %w", l.name, refused)
}

// guardDirect is permWatch.guard for one direct get on the log's stream.
func (l *Log) guardDirect(ctx context.Context) (context.Context, func()) {
	return l.perms.guard(ctx, l.isDirectGet)
}

func (l *Log) isDirectGet(subject string) bool {
	stream, ok := strings.CutPrefix(subject, directGetPrefix)
	return ok && (stream == l.name || strings.HasPrefix(stream, l.name+"."))
}

// direct reports whether reads may ask for direct gets: the stream serves
// them, and the server did not refuse them to this connection.
func (l *Log) direct() bool {
	return l.stream.CachedInfo().Config.AllowDirect && l.perms.directRefusal(l.name) == nil
}
