package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/demo"
	"github.com/sharedconfig/sharedconfig/internal/timeline"
)

func newTimelineCmd(f *rootFlags) *cobra.Command {
	var html string
	var last int
	cmd := &cobra.Command{
		Use:   "timeline",
		Short: "Draw a config's recorded log as a timeline: who wrote what, when",
		Long: `timeline draws the config's log as the demo draws its runs: one lane per
writer named in the log, each entry where it landed, the stream revision by
revision, the leases the config holds and those the entries end. The log
keeps only the appends that landed: refused tries are not in it
('sharedconfig demo' shows them).`,
		Example: `  sharedconfig timeline -s myScope -n myConfig
  sharedconfig timeline --html config.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return timelineCommandFunc(cmd, f, html, last) },
	}
	cmd.Flags().StringVar(&html, "html", "", "draw the timeline as a self-contained HTML page in `FILE` instead of on the terminal")
	cmd.Flags().IntVar(&last, "last", 200, "draw the last `N` entries")
	return cmd
}

func timelineCommandFunc(cmd *cobra.Command, f *rootFlags, html string, last int) error {
	if last < 1 {
		return &exitError{exitStartup, fmt.Errorf("--last %d: give a number of entries above zero", last)}
	}
	s, err := openExisting(cmd, f, "TIMELINE")
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := s.command(cmd.Context(), f.timeout)
	defer cancel()
	changes, err := s.cfg.History(ctx, "", last)
	if err != nil {
		return failed(cmd, f, "TIMELINE", err)
	}
	t := demo.FromHistory(fmt.Sprintf("%s/%s, as its log records it", f.scope, f.name), changes, s.cfg.State())
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "**** %s/%s: %s. %s\n", f.scope, f.name, demo.Describe(t), demo.HistoryNote)
	if html != "" {
		if err := writeHTMLFile(html, t); err != nil {
			return failed(cmd, f, "TIMELINE", err)
		}
		fmt.Fprintf(out, "**** The timeline is drawn in %s\n", visible(html))
		return nil
	}
	if err := timeline.WriteText(out, t, useColour(out)); err != nil {
		return &exitError{exitFailures, err}
	}
	return nil
}
