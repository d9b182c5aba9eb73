package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/demo"
	"github.com/sharedconfig/sharedconfig/internal/timeline"
	"github.com/sharedconfig/sharedconfig/jetstream"
)

type demoFlags struct {
	conn    rootFlags // only its connection flags are registered
	scope   string
	writers int
	speed   float64
	step    bool
	keep    bool
	html    string
}

func newDemoCmd() *cobra.Command {
	var d demoFlags
	cmd := &cobra.Command{
		Use:   "demo " + strings.Join(demo.Scenarios, "|"),
		Short: "Watch optimistic concurrency happen: writers race on a fresh config, narrated and drawn",
		Long: `demo runs a scripted scenario on a fresh config of its own (removed afterwards
unless --keep): its writers are goroutines, each with its own connection and
copy, making real conditional appends on the server. It narrates each step,
then draws the tries as a timeline: one lane per writer, each try at the
revision it was based on, and the stream revision by revision.

  race     writers change the same key from the same revision
  stale    the original's two-process walkthrough, step 8's stale copy
  lease    members register under /servers/; one dies; its lease expires
  turns    writers in tight loops, without and with turns
  compact  a compaction racing a writer
  combine  writers in tight loops hand PUTs to the writer under way (the default), then without`,
		Example: `  sharedconfig demo race
  sharedconfig demo race --writers 4 --html race.html
  sharedconfig demo stale --step`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: demo.Scenarios,
		RunE:      func(cmd *cobra.Command, args []string) error { return demoCommandFunc(cmd, &d, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&d.scope, "scope", "s", "demo", "the scope of the fresh configs the demo makes")
	fl.IntVar(&d.writers, "writers", 2, fmt.Sprintf("how many writers race (race, turns, combine; 2 to %d)", demo.MaxWriters))
	fl.Float64Var(&d.speed, "speed", 1, "how fast the steps go: 2 is twice as fast, 0.5 half")
	fl.BoolVar(&d.step, "step", false, "wait for Enter before each step")
	fl.BoolVar(&d.keep, "keep", false, "keep the demo's configs on the server (to look at them after)")
	fl.StringVar(&d.html, "html", "", "also draw the timeline as a self-contained HTML page in `FILE`")
	fl.DurationVar(&d.conn.timeout, "timeout", 5*time.Second, "how long one operation may wait for the server")
	d.conn.conn.register(cmd)
	d.conn.source.register(cmd)
	return cmd
}

func demoCommandFunc(cmd *cobra.Command, d *demoFlags, scenario string) error {
	if err := jetstream.ValidateName("scope", d.scope); err != nil {
		return &exitError{exitStartup, err}
	}
	if d.conn.timeout <= 0 {
		return &exitError{exitStartup, fmt.Errorf("--timeout %s: give a duration above zero, such as 5s", d.conn.timeout)}
	}
	// The page's file is made first: a path that cannot be written fails
	// before the demo runs, not after.
	var page *os.File
	if d.html != "" {
		var err error
		if page, err = os.Create(d.html); err != nil {
			return &exitError{exitStartup, fmt.Errorf("--html: %w", err)}
		}
		defer page.Close()
	}
	out := cmd.OutOrStdout()
	o := demo.Options{
		Dial: func(ctx context.Context) (*nats.Conn, error) {
			nc, _, err := d.conn.dial(ctx)
			return nc, err
		},
		Out: out, Writers: d.writers, Speed: d.speed, Scope: d.scope, Keep: d.keep, Timeout: d.conn.timeout,
	}
	if d.step {
		o.Step = waitForEnter(cmd)
	}
	res, err := demo.Run(cmd.Context(), scenario, o)
	if errors.Is(err, demo.ErrUnknownScenario) || res == nil {
		return &exitError{exitStartup, err}
	}
	if err != nil {
		fmt.Fprintf(out, "!!!! The demo stopped: %s\n", visible(err.Error()))
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Timeline: each writer's tries, at the revision each was based on")
	if werr := timeline.WriteText(out, res.Timeline, useColour(out)); werr != nil {
		return &exitError{exitFailures, werr}
	}
	if d.keep {
		for _, name := range res.Configs {
			fmt.Fprintf(out, "**** Kept %s/%s: 'sharedconfig timeline -s %s -n %s' draws its log\n", d.scope, name, d.scope, name)
		}
	}
	if page != nil {
		if herr := writeHTML(page, res.Timeline); herr != nil {
			return &exitError{exitFailures, herr}
		}
		fmt.Fprintf(out, "**** The timeline is drawn in %s\n", visible(d.html))
	}
	if err != nil {
		return &exitError{code: exitFailures}
	}
	return nil
}

// waitForEnter asks for Enter on standard error and waits for it; the end
// of the input, or Ctrl-C, stops the demo.
func waitForEnter(cmd *cobra.Command) func() error {
	in := bufio.NewReader(cmd.InOrStdin())
	return func() error {
		fmt.Fprint(cmd.ErrOrStderr(), "(Enter for the next step) ")
		line := make(chan error, 1)
		go func() {
			_, err := in.ReadString('\n')
			line <- err
		}()
		select {
		case err := <-line:
			if err == io.EOF {
				return errors.New("the input ended before the last step")
			}
			return err
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		}
	}
}

// useColour: colours on a terminal, unless NO_COLOR is set.
func useColour(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	if cw, ok := w.(*checkedWriter); ok {
		w = cw.w
	}
	return isTerminal(w)
}

func writeHTMLFile(path string, t *timeline.Timeline) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return writeHTML(f, t)
}

// writeHTML writes t's page to f and closes it.
func writeHTML(f *os.File, t *timeline.Timeline) error {
	if err := timeline.WriteHTML(f, t); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
