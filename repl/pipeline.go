package repl

import (
	"context"
	"strings"
	"sync"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// A script's writes run ahead: a line that is one conditional write (see
// aheadCommands) starts as soon as the line before it has its place in the
// synchronizer's queue, without waiting for that line's answer, so that
// consecutive writes land together (group commit) instead of one round trip
// each. Group commit runs them in the script's order, each on the state the
// lines before it left, so every line gets the answer it would get alone;
// answers are printed in order as they come. Any other line (a read, a
// refusal, QUIT) waits until every line before it is answered, then runs as
// it always did. The lines of one batch share one revision, so a terminal,
// JSON output and --revisions (answers that show revisions, which a script
// may count on), TRACE ON (tries print as they happen) and --stop-on-error
// (no line may start before the one before it is known to have succeeded)
// keep one line at a time.

// aheadCommands are the commands whose answer depends only on the state the
// lines before them leave: one UpdateState call each.
var aheadCommands = map[string]bool{"PUT": true, "PUT_IF_ABSENT": true, "REMOVE": true, "REPLACE": true}

// maxAhead bounds the lines started and not yet answered: the entry their
// writes share grows with them (a batch too large for one message falls
// back to one try per line).
const maxAhead = 64

// aheadLine is a line started ahead, waiting to have its answer printed.
type aheadLine struct {
	command string
	what    string // where the line came from, for failures ("line")
	number  int
	done    chan struct{}
	answer  reply
}

// pipeline runs a script's lines, writes ahead.
type pipeline struct {
	sh       *Shell
	ahead    chan *aheadLine // to the printer, in the script's order
	answered sync.WaitGroup  // one per line started ahead, until printed
}

// newPipeline starts the printer of sh's answers to lines run ahead; stop
// ends it once every line is answered.
func newPipeline(sh *Shell) (p *pipeline, stop func()) {
	p = &pipeline{sh: sh, ahead: make(chan *aheadLine, maxAhead)}
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for a := range p.ahead {
			<-a.done
			sh.renderAt(a.command, a.answer, a.what, a.number)
			p.answered.Done()
		}
	}()
	return p, func() {
		close(p.ahead)
		<-printed
	}
}

// execute runs one line of the script: ahead if it can, else once the lines
// before it are answered.
func (p *pipeline) execute(ctx context.Context, text string) outcome {
	if c, args, ahead := p.sh.runsAhead(text); ahead {
		p.start(ctx, c, args)
		return ok
	}
	p.answered.Wait()
	return p.sh.Execute(ctx, text)
}

// start runs the line in the background and returns once its write has its
// place in the queue (or is over).
func (p *pipeline) start(ctx context.Context, c *command, args []string) {
	what, n := p.sh.currentPosition()
	a := &aheadLine{command: c.name, what: what, number: n, done: make(chan struct{})}
	p.answered.Add(1)
	p.ahead <- a // waits while maxAhead lines are unanswered
	queued := make(chan struct{})
	var once sync.Once
	isQueued := func() { once.Do(func() { close(queued) }) }
	lineCtx, cancel := context.WithTimeout(statesync.WithQueued(ctx, isQueued), p.sh.timeout)
	go func() {
		defer close(a.done)
		defer isQueued() // refused before it queued: the next line may start
		defer cancel()
		a.answer = c.run(lineCtx, p.sh, args)
	}()
	<-queued
}

// runsAhead says whether the line is a write that may run ahead, and returns
// its command and arguments.
func (sh *Shell) runsAhead(text string) (*command, []string, bool) {
	if sh.json || sh.revisions || sh.stopOnError || sh.tracing.Load() || sh.cfg == nil || strings.HasPrefix(strings.TrimSpace(text), "#") || len(text) > MaxLineLength {
		return nil, nil, false
	}
	line, err := Parse(text)
	if err != nil || line.Word == "" {
		return nil, nil, false
	}
	c := lookup(line.Word)
	if c == nil || !aheadCommands[c.name] {
		return nil, nil, false
	}
	if _, bad := c.checkArgs(line.Args); bad {
		return nil, nil, false
	}
	return c, line.Args, true
}
