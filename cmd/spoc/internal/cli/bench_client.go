package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/loadgen/clientbench"
)

func init() { register(newBenchCmd) }

type benchClientFlags struct {
	serve                        string
	levels                       []int
	warmup, duration             time.Duration
	firstToken, interval         time.Duration
	maxTokens, promptTokens      int
	serverCPU, clientCPU, target string
	external                     []string
	asJSON                       bool
	cpuProfile                   string
	memProfile                   string
	skipSelf                     bool
}

func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Measure spoc's own components"}
	var f benchClientFlags
	client := &cobra.Command{
		Use:   "client",
		Short: "Measure the load client's accurate ceiling against a pinned test server",
		Long: `bench client starts the streaming test server on one core (taskset) and runs
the load client on another, at each concurrency in --levels. For every level it
joins the client's records with the server's log of when each chunk was
actually written and reports the client's timing error, dispatch lag and
throughput, and the client's and the server's CPU. The accurate ceiling is the
most streams at which ITL error p99 <= 2 ms and dispatch lag p99 <= 5 ms, at
that level and every lower one measured, with the server below 0.9 of its
core (above that the level is server-bound and measures the machine). On a
shared machine run it at real-time priority (chrt -r 1 spoc bench client ...),
see docs/loadgen.md. --external NAME=COMMAND measures another client
the same way; the command gets {url} {streams} {warmup} {duration}
{max_tokens} {prompt_tokens} {out} substituted and must write result.Record
JSON lines to {out}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.serve != "" {
				return serveBenchServer(cmd, &f)
			}
			return benchClient(cmd, &f)
		},
	}
	fl := client.Flags()
	fl.StringVar(&f.serve, "serve", "", "only run the test server on this address (used by bench client itself)")
	fl.IntSliceVar(&f.levels, "levels", []int{100, 200, 500, 1000, 1500, 2000}, "concurrent streams to measure")
	fl.DurationVar(&f.warmup, "warmup", 2*time.Second, "warm-up per level")
	fl.DurationVar(&f.duration, "duration", 5*time.Second, "measured window per level")
	fl.DurationVar(&f.firstToken, "first-token-delay", 20*time.Millisecond, "server: time to first token")
	fl.DurationVar(&f.interval, "token-interval", 20*time.Millisecond, "server: time between tokens")
	fl.IntVar(&f.maxTokens, "max-tokens", 50, "output tokens per request")
	fl.IntVar(&f.promptTokens, "prompt-tokens", 100, "prompt words per request")
	fl.StringVar(&f.serverCPU, "server-cpu", "0", "taskset CPU list for the server (empty: no pinning)")
	fl.StringVar(&f.clientCPU, "client-cpu", "1", "taskset CPU list for the client (empty: no pinning)")
	fl.StringVar(&f.target, "target", "", "use an already running test server instead of starting one")
	fl.StringArrayVar(&f.external, "external", nil, "NAME=COMMAND: also measure an external client (repeatable)")
	fl.BoolVar(&f.skipSelf, "skip-self", false, "measure only the --external clients, not spoc's own")
	fl.BoolVar(&f.asJSON, "json", false, "print the levels as JSON")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write the client's CPU profile (pprof) to this file")
	fl.StringVar(&f.memProfile, "memprofile", "", "write the client's allocation profile (pprof) to this file at the end")
	bench.AddCommand(client)
	return bench
}

// startCPUProfile starts a CPU profile to path (none when path is empty).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

func serveBenchServer(cmd *cobra.Command, f *benchClientFlags) error {
	stopProfile, err := startCPUProfile(f.cpuProfile) // with --serve: the server's profile
	if err != nil {
		return err
	}
	defer stopProfile()
	return clientbench.Serve(cmd.Context(), f.serve, f.firstToken, f.interval, func(url string) { fmt.Fprintln(cmd.OutOrStdout(), url) })
}

func benchClient(cmd *cobra.Command, f *benchClientFlags) error {
	opts, err := benchOptions(f)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	// the client runs pinned to its cores: this same command, again, under taskset
	if done, err := clientbench.Pin(cmd.Context(), f.clientCPU, append([]string{self}, os.Args[1:]...), cmd.OutOrStdout(), cmd.ErrOrStderr()); done {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &ExitError{Code: ee.ExitCode()}
		}
		return err
	}
	opts.Log = cmd.ErrOrStderr()
	opts.ServerCommand = []string{self, "bench", "client", "--serve", "127.0.0.1:0",
		"--first-token-delay", f.firstToken.String(), "--token-interval", f.interval.String()}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if f.memProfile != "" {
		defer func() {
			if err := writeAllocProfile(f.memProfile); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "spoc: warning: %v\n", err)
			}
		}()
	}
	out := cmd.OutOrStdout()
	if !f.asJSON {
		writeBenchHeader(out, f)
		opts.Progress = func(lv *clientbench.Level) { writeBenchLevel(cmd.ErrOrStderr(), lv) }
	}
	res, err := clientbench.Run(cmd.Context(), opts)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(out, res.Levels)
	}
	return writeBenchTable(out, res)
}

// benchOptions turns the flags into the benchmark's options.
func benchOptions(f *benchClientFlags) (clientbench.Options, error) {
	if f.skipSelf && len(f.external) == 0 {
		return clientbench.Options{}, usageErrorf("--skip-self needs at least one --external client")
	}
	if f.serverCPU != "" {
		if _, err := clientbench.CountCPUs(f.serverCPU); err != nil {
			return clientbench.Options{}, usageErrorf("--server-cpu: %v", err)
		}
	}
	opts := clientbench.Options{Levels: f.levels, Target: f.target, ServerCPU: f.serverCPU, ClientCPU: f.clientCPU, SkipSelf: f.skipSelf,
		Workload: clientbench.Workload{Warmup: f.warmup, Duration: f.duration, PromptTokens: f.promptTokens, MaxTokens: f.maxTokens}}
	for _, spec := range f.external {
		x, err := clientbench.ParseExternal(spec)
		if err != nil {
			return clientbench.Options{}, usageErrorf("--external: %v", err)
		}
		opts.External = append(opts.External, x)
	}
	return opts, nil
}

// writeBenchHeader says what is measured, on which machine, before the
// first level.
func writeBenchHeader(w io.Writer, f *benchClientFlags) {
	fmt.Fprintf(w, "spoc bench client: %s, %d CPUs visible to the client (GOMAXPROCS %d), server cpu %q, client cpu %q, %s\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), f.serverCPU, f.clientCPU, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "server: first token %s, token every %s, %d tokens per request; %s warm-up + %s measured per level\n",
		f.firstToken, f.interval, f.maxTokens, f.warmup, f.duration)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(w, "machine load average at start: %s", la)
	}
}

// writeBenchLevel is a level's progress line.
func writeBenchLevel(w io.Writer, lv *clientbench.Level) {
	gc := ""
	if lv.Client == clientbench.GoClient {
		gc = fmt.Sprintf(", %d GC cycles", lv.GCCycles)
	}
	fmt.Fprintf(w, "  %s %d streams: itl err p99 %.2fms, arrival offset p1/p50/p99 %.2f/%.2f/%.2fms, lag p99 %.2fms, %.0f tok/s%s\n", lv.Client, lv.Streams,
		lv.ITLErrP99Ms, lv.ArrivalOffsetP01Ms, lv.ArrivalOffsetP50Ms, lv.ArrivalOffsetP99Ms, lv.DispatchLagP99Ms, lv.TokensPerSecond, gc)
}

// writeBenchTable prints every level and each client's accurate ceiling.
func writeBenchTable(w io.Writer, res clientbench.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tstreams\treq\tok\ttok/s\tTTFT err p50\tp99\tITL err p50\tp90\tp99\tmax\tlag p99\tCPU\tserver\taccurate\t")
	var order []string
	for _, l := range res.Levels {
		if !slices.Contains(order, l.Client) {
			order = append(order, l.Client)
		}
		cpu := "-"
		if l.ClientCores > 0 {
			cpu = fmt.Sprintf("%.2f cores, %.1fµs/tok", l.ClientCores, l.CPUPerTokenUS)
			if l.Client == clientbench.GoClient {
				cpu += fmt.Sprintf(", %d GC", l.GCCycles)
			}
		}
		server := "-"
		if l.ServerCores > 0 {
			server = fmt.Sprintf("%.2f cores", l.ServerCores)
			if l.ServerBound() {
				server += " (server-bound)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.2fms\t%.2fms\t%.2fms\t%.2fms\t%.2fms\t%.1fms\t%.2fms\t%s\t%s\t%v\t\n", l.Client, l.Streams, l.Requests, l.OK,
			l.TokensPerSecond, l.TTFTErrP50Ms, l.TTFTErrP99Ms, l.ITLErrP50Ms, l.ITLErrP90Ms, l.ITLErrP99Ms, l.ITLErrMaxMs, l.DispatchLagP99Ms, cpu, server, l.Accurate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range order {
		fmt.Fprintf(w, "accurate ceiling of %s: %d streams (ITL error p99 <= %s and dispatch lag p99 <= %s at this level and every lower one measured; server-bound levels do not count)\n",
			c, res.Ceilings[c], clientbench.DefaultITLErrorP99, clientbench.DefaultDispatchLagP99)
	}
	return nil
}

// writeAllocProfile writes the allocation profile since the start.
func writeAllocProfile(path string) error {
	pf, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create allocation profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(pf, 0); err != nil {
		pf.Close()
		return fmt.Errorf("write allocation profile %s: %w", path, err)
	}
	return pf.Close()
}
