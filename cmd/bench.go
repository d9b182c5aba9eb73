package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/asciitable"
	"github.com/sharedconfig/sharedconfig/internal/bench"
	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// benchFlags are the bench command's settings.
type benchFlags struct {
	o       bench.Options
	conn    connFlags
	output  string
	writers string
	cluster bool
	scale   bool
	// kvGet is BUCKET/KEY: instead of measuring, get KEY as "nats kv get"
	// does and print its value (the one-shot figure's anchor, run as a
	// process of its own).
	kvGet string
	// only names the phases to run (hidden: for working on one figure).
	only []string
}

func newBenchCmd() *cobra.Command {
	f := &benchFlags{o: bench.DefaultOptions()}
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure sharedconfig against raw JetStream, NATS KV and request round trips",
		Long: `bench measures each cost of sharedconfig beside the primitive it is built on,
on the same server in the same run, and prints both and their ratio:
uncontended PUT latency against a raw conditional publish, PUT with a large
state against a small one, contended throughput against NATS KV
compare-and-set (with how evenly the commits were shared out), a PUT now
and then among writers in closed loops against the same on NATS KV, 16
goroutines on one config against 16 configs (group commit), REFRESH against
a request round trip, a script of piped PUTs against as many sequential raw
conditional publishes, catch-up against a raw
ordered consumer, joining after compaction against joining a whole history,
GET's allocations, and memory per key.

Without --server it starts its own server on a temporary store, so nothing
else shares the machine's server during the run.

With --cluster it measures replication instead: uncontended PUT and
contended throughput on R3 streams, beside a raw conditional publish on the
same R3 stream and NATS KV on an R3 bucket. It starts its own 3-node cluster
on loopback ports and temporary stores, or measures the cluster --server
names.

With --scale it measures scale instead (minutes): --configs configs created
on one server and listed, and the heap the server holds per config, each
beside raw streams; and one config followed by --followers connections, the
time from a commit to the last follower's callback beside as many raw
ordered consumers. With --cluster too, on R3 streams of the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, f) },
	}
	fl := c.Flags()
	fl.IntVar(&f.o.Ops, "ops", f.o.Ops, "operations timed per latency figure")
	fl.IntVar(&f.o.Keys, "keys", f.o.Keys, "keys in the large state")
	fl.IntVar(&f.o.Entries, "entries", f.o.Entries, "pending entries for catch-up")
	fl.StringVar(&f.writers, "writers", "1,2,4,8,16", "writer counts for the contended figures")
	fl.DurationVar(&f.o.Duration, "duration", f.o.Duration, "how long each contended figure runs")
	fl.StringVarP(&f.output, "output", "o", "text", "`text` (a table) or json")
	fl.BoolVar(&f.o.Combining, "combine", true, "open every config of ours with combining, as the shell does (--combine=false: turns only)")
	fl.BoolVar(&f.cluster, "cluster", false, "measure on R3 streams of a 3-node cluster (its own, or the one --server names)")
	fl.BoolVar(&f.scale, "scale", false, "measure many configs and many followers instead")
	fl.IntVar(&f.o.Configs, "configs", f.o.Configs, "configs the --scale run creates")
	fl.IntVar(&f.o.Followers, "followers", f.o.Followers, "connections following one config in the --scale run")
	fl.StringVar(&f.conn.opts.URLs, "server", "", "measure against these NATS server `URLS` (default: $NATS_URL, else an embedded server)")
	fl.StringVar(&f.kvGet, "kv-get", "", "get `BUCKET/KEY` as nats kv get does, print the value and exit (the one-shot figure's anchor)")
	fl.StringSliceVar(&f.only, "phase", nil, "run only these phases")
	_ = fl.MarkHidden("kv-get")
	_ = fl.MarkHidden("phase")
	return c
}

// runBench checks the flags, finds or starts the server, runs every phase
// and prints the figures, also those of a run that stopped early.
func runBench(cmd *cobra.Command, f *benchFlags) error {
	o, err := f.options()
	if err != nil {
		return &exitError{exitStartup, err}
	}
	connOpts := f.conn.opts
	connOpts.Name = "sharedconfig-bench"
	if f.kvGet != "" {
		return kvGet(cmd, connOpts, f.kvGet)
	}
	where := "an embedded server on a temporary store"
	phases := bench.Phases
	if f.cluster {
		o.Replicas, phases = benchClusterSize, bench.ClusterPhases
		where = fmt.Sprintf("a %d-node cluster of embedded servers on temporary stores", benchClusterSize)
	}
	if f.scale {
		phases = bench.ScalePhases
	}
	if connOpts.URLs == "" && os.Getenv("NATS_URL") == "" {
		urls, stop, err := startBenchServers(f.cluster)
		if err != nil {
			return &exitError{exitStartup, err}
		}
		defer stop()
		connOpts.URLs = urls
	} else {
		where = localserver.RedactURLs(connOpts.ResolveURLs())
	}
	o.Connect = func() (*nats.Conn, error) { return localserver.Connect(connOpts) }
	o.Process = benchProcess(connOpts.ResolveURLs())
	if phases, err = onlyPhases(phases, f.only); err != nil {
		return &exitError{exitStartup, err}
	}
	// Fail early and clearly if the server is not there.
	nc, err := o.Connect()
	if err != nil {
		return &exitError{exitStartup, err}
	}
	cluster := nc.ConnectedClusterName()
	nc.Close()
	if f.cluster && cluster == "" {
		return &exitError{exitStartup, fmt.Errorf("--cluster: the server at %s is not a node of a cluster; name a cluster's servers, or leave out --server and $NATS_URL to start one", where)}
	}
	o.Progress = progressLine(cmd.ErrOrStderr())
	start := time.Now()
	rows, err := bench.RunPhases(cmd.Context(), phases, o)
	o.Progress("", 0, 0)
	if f.output == "json" {
		writeBenchJSON(cmd.OutOrStdout(), rows, where, time.Since(start))
	} else {
		writeBenchTable(cmd.OutOrStdout(), rows, where, time.Since(start))
	}
	if err != nil {
		return &exitError{exitFailures, fmt.Errorf("the run stopped: %w", err)}
	}
	return nil
}

// startBenchServers starts the bench's own server, or cluster, on a
// temporary store, and returns their URLs and what stops them and removes
// the store.
func startBenchServers(cluster bool) (urls string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "sharedconfig-bench-")
	if err != nil {
		return "", nil, err
	}
	if cluster {
		urls, stopCluster, err := startBenchCluster(dir, benchClusterSize)
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		return urls, func() { stopCluster(); os.RemoveAll(dir) }, nil
	}
	srv, err := localserver.StartServer(localserver.ServerOptions{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return srv.ClientURL(), func() { srv.Shutdown(); os.RemoveAll(dir) }, nil
}

// options are the run's sizes, checked.
func (f *benchFlags) options() (bench.Options, error) {
	o := f.o
	if f.output != "text" && f.output != "json" {
		return o, fmt.Errorf("--output %q: use text or json", f.output)
	}
	o.Writers = nil
	for _, w := range strings.Split(f.writers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			return o, fmt.Errorf("--writers %q: give counts such as 1,2,4", f.writers)
		}
		o.Writers = append(o.Writers, n)
	}
	if o.Ops < 1 || o.Keys < 10 || o.Entries < 1 || o.Duration <= 0 || o.Configs < 1 || o.Followers < 1 {
		return o, fmt.Errorf("--ops, --entries, --duration, --configs and --followers must be positive, --keys at least 10")
	}
	return o, nil
}

// progressLine shows the phase being measured on one line of a terminal,
// or a line per phase elsewhere. An empty phase clears it.
func progressLine(w io.Writer) func(phase string, done, total int) {
	tty := isTerminal(w)
	last, lastShown := "", time.Time{}
	return func(phase string, done, total int) {
		if !tty {
			if phase != last && phase != "" {
				fmt.Fprintf(w, "bench: %s\n", phase)
			}
			last = phase
			return
		}
		if phase == "" {
			fmt.Fprint(w, "\r\x1b[K")
			return
		}
		if phase == last && time.Since(lastShown) < 100*time.Millisecond {
			return
		}
		last, lastShown = phase, time.Now()
		if total > 0 {
			fmt.Fprintf(w, "\r\x1b[Kbench: %s %d%%", phase, done*100/total)
		} else {
			fmt.Fprintf(w, "\r\x1b[Kbench: %s", phase)
		}
	}
}

func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

func writeBenchTable(w io.Writer, rows []bench.Row, where string, took time.Duration) {
	fmt.Fprintf(w, "sharedconfig bench on %s (%s), %s\n", where, machine(), took.Round(time.Second))
	cells := make([][]string, len(rows))
	for i, r := range rows {
		anchor, ratio := "", ""
		if r.AnchorName != "" {
			anchor = fmt.Sprintf("%s %s (%s)", number(r.Anchor), r.Unit, r.AnchorName)
			ratio = fmt.Sprintf("%.2f×", r.Ratio)
		}
		target := r.Target
		if r.Met != nil {
			target += map[bool]string{true: " met", false: " NOT met"}[*r.Met]
		}
		cells[i] = []string{r.Name, number(r.Ours) + " " + r.Unit, anchor, ratio, target, r.Note}
	}
	asciitable.Render(w, []string{"Figure", "Ours", "Anchor", "Ratio", "Target", "Notes"}, cells)
}

func number(f float64) string {
	if f >= 100 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

func writeBenchJSON(w io.Writer, rows []bench.Row, where string, took time.Duration) {
	b, _ := json.MarshalIndent(map[string]any{"server": where, "machine": machine(), "seconds": took.Seconds(), "figures": rows}, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}
