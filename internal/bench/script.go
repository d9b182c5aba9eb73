package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	scjs "github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/repl"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// scriptLines is how many PUTs the script figure pipes (fewer if
// Options.Entries is smaller).
const scriptLines = 20_000

// script: a script of PUTs piped into the shell against as many sequential
// raw conditional publishes, each side in two halves run a b b a.
func (r *runner) script(ctx context.Context) ([]Row, error) {
	defer r.closeAll()
	n := min(r.o.Entries, scriptLines) / 2 * 2
	name := uniqueName("script")
	c, err := r.open(ctx, name, sharedconfig.Options{})
	if err != nil {
		return nil, err
	}
	nc, err := r.connect()
	if err != nil {
		return nil, err
	}
	var ours time.Duration
	var raw []time.Duration
	for i, side := range []string{"raw", "ours", "ours", "raw"} {
		r.progress("piped PUTs", i*n/2, 2*n)
		var d time.Duration
		if side == "raw" {
			d, err = rawPublishes(ctx, nc, name, n/2)
			raw = append(raw, d)
		} else {
			d, err = pipedPuts(ctx, c, i, n/2)
			ours += d
		}
		if err != nil {
			return nil, err
		}
	}
	x := row(fmt.Sprintf("%d piped PUTs", n), "ms", ms(ours), ms(raw[0]+raw[1]), "sequential raw conditional publishes").atMost(1.0)
	x.Note = fmt.Sprintf("the second half of the raw publishes against the first: %.2f×", float64(raw[1])/float64(raw[0]))
	return []Row{x}, nil
}

// pipedPuts runs n PUT lines of new keys through a shell on c, as a script
// piped into the command runs, and returns how long they took.
func pipedPuts(ctx context.Context, c *sharedconfig.Config, round, n int) (time.Duration, error) {
	var script strings.Builder
	for i := range n {
		fmt.Fprintf(&script, "PUT script%d.%07d, value\n", round, i)
	}
	sh := repl.New(repl.Options{Out: io.Discard})
	sh.Attach(c)
	defer sh.Close()
	start := time.Now()
	if err := sh.Run(ctx, repl.NewScript(strings.NewReader(script.String()))); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if sh.Failures() > 0 {
		return 0, fmt.Errorf("piped PUTs: %d lines failed", sh.Failures())
	}
	return d, nil
}

// rawPublishes appends n update entries to the config's stream, one after
// another, each on the condition of the last one's sequence.
func rawPublishes(ctx context.Context, nc *nats.Conn, name string, n int) (time.Duration, error) {
	js, _ := jetstream.New(nc)
	entry := nats.NewMsg(scjs.Subject(benchScope, name))
	entry.Data = []byte(`{"ops":[{"op":"put","key":"key","value":"value"}]}`)
	entry.Header.Set(scjs.HeaderFormat, scjs.FormatVersion)
	entry.Header.Set(scjs.HeaderKind, scjs.KindUpdate)
	entry.Header.Set(scjs.HeaderWriter, benchWriter)
	stream, err := js.Stream(ctx, scjs.StreamName(benchScope, name))
	if err != nil {
		return 0, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	last := info.State.LastSeq
	start := time.Now()
	for range n {
		ack, err := js.PublishMsg(ctx, entry, jetstream.WithExpectLastSequence(last))
		if err != nil {
			return 0, err
		}
		last = ack.Sequence
	}
	return time.Since(start), nil
}
