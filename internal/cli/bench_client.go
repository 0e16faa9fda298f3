package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/loadgen/clientbench"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
)

func init() { register(newBenchCmd) }

// pinnedEnv marks a bench process already re-executed under taskset.
const pinnedEnv = "SPOC_BENCH_PINNED"

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
	ln, err := net.Listen("tcp", f.serve)
	if err != nil {
		return fmt.Errorf("listen %s: %w", f.serve, err)
	}
	// The server keeps a log of every emission; a GC cycle that stalls its
	// writers makes bursts every client then has to absorb, so it runs with
	// the same relaxed GC target as the client.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(loadgen.DefaultGCPercent)
	}
	srv := &http.Server{Handler: testserver.New(testserver.Config{
		FirstTokenDelay: f.firstToken, TokenInterval: f.interval, KeepLog: true,
	})}
	fmt.Fprintf(cmd.OutOrStdout(), "http://%s\n", ln.Addr())
	go func() {
		<-cmd.Context().Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// reexecPinned runs this same command under taskset on cpus and returns its
// exit status; false when pinning is off or already done.
func reexecPinned(cmd *cobra.Command, cpus string) (bool, error) {
	if cpus == "" || os.Getenv(pinnedEnv) == "1" {
		return false, nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "spoc: warning: taskset not found (apt-get install -y util-linux); running unpinned")
		return false, nil
	}
	self, err := os.Executable()
	if err != nil {
		return false, fmt.Errorf("find own executable: %w", err)
	}
	c := exec.CommandContext(cmd.Context(), taskset, append([]string{"-c", cpus, self}, os.Args[1:]...)...)
	c.Env = append(os.Environ(), pinnedEnv+"=1")
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return true, &ExitError{Code: ee.ExitCode()}
		}
		return true, err
	}
	return true, nil
}

func benchClient(cmd *cobra.Command, f *benchClientFlags) error {
	if f.skipSelf && len(f.external) == 0 {
		return usageErrorf("--skip-self needs at least one --external client")
	}
	serverCPUs := runtime.NumCPU()
	if f.serverCPU != "" {
		n, err := clientbench.CountCPUs(f.serverCPU)
		if err != nil {
			return usageErrorf("--server-cpu: %v", err)
		}
		serverCPUs = n
	}
	if done, err := reexecPinned(cmd, f.clientCPU); done {
		return err
	}
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
	ctx := cmd.Context()
	url, serverPID := f.target, 0
	if url == "" {
		u, pid, stop, err := startBenchServer(ctx, cmd.ErrOrStderr(), f)
		if err != nil {
			return err
		}
		defer stop()
		url, serverPID = u, pid
	}
	// meter measures the server's CPU over a level's measured window.
	meter := func(w clientbench.Workload) func() float64 {
		if serverPID == 0 {
			return func() float64 { return 0 }
		}
		return clientbench.MeterCPU(serverPID, w.Warmup+20*time.Millisecond, w.Duration).Cores
	}
	var levels []*clientbench.Level
	out := cmd.OutOrStdout()
	if !f.asJSON {
		fmt.Fprintf(out, "spoc bench client: %s, %d CPUs visible to the client (GOMAXPROCS %d), server cpu %q, client cpu %q, %s\n",
			runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), f.serverCPU, f.clientCPU, time.Now().UTC().Format(time.RFC3339))
		fmt.Fprintf(out, "server: first token %s, token every %s, %d tokens per request; %s warm-up + %s measured per level\n",
			f.firstToken, f.interval, f.maxTokens, f.warmup, f.duration)
		if la, err := os.ReadFile("/proc/loadavg"); err == nil {
			fmt.Fprintf(out, "machine load average at start: %s", la)
		}
	}
	w := clientbench.Workload{Warmup: f.warmup, Duration: f.duration, PromptTokens: f.promptTokens, MaxTokens: f.maxTokens}
	for _, n := range f.levels {
		if f.skipSelf {
			break
		}
		w.Streams = n
		serverCores := meter(w)
		lv, err := clientbench.RunGo(ctx, url, w)
		if err != nil {
			return fmt.Errorf("level %d: %w", n, err)
		}
		lv.ServerCores, lv.ServerCPUs = serverCores(), serverCPUs
		levels = append(levels, lv)
		if !f.asJSON {
			fmt.Fprintf(cmd.ErrOrStderr(), "  %s %d streams: itl err p99 %.2fms, arrival offset p1/p50/p99 %.2f/%.2f/%.2fms, lag p99 %.2fms, %.0f tok/s, %d GC cycles\n", lv.Client, n, lv.ITLErrP99Ms, lv.ArrivalOffsetP01Ms, lv.ArrivalOffsetP50Ms, lv.ArrivalOffsetP99Ms, lv.DispatchLagP99Ms, lv.TokensPerSecond, lv.GCCycles)
		}
	}
	for _, spec := range f.external {
		name, command, ok := strings.Cut(spec, "=")
		if !ok || name == "" || command == "" {
			return usageErrorf("--external wants NAME=COMMAND, got %q", spec)
		}
		for _, n := range f.levels {
			w.Streams = n
			serverCores := meter(w) // the window starts after the client's start-up, so this is approximate
			lv, err := runExternal(ctx, url, name, command, f.clientCPU, w)
			if err != nil {
				return fmt.Errorf("%s at %d streams: %w", name, n, err)
			}
			lv.ServerCores, lv.ServerCPUs = serverCores(), serverCPUs
			levels = append(levels, lv)
			if !f.asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "  %s %d streams: itl err p99 %.2fms, arrival offset p1/p50/p99 %.2f/%.2f/%.2fms, lag p99 %.2fms, %.0f tok/s\n", name, n, lv.ITLErrP99Ms, lv.ArrivalOffsetP01Ms, lv.ArrivalOffsetP50Ms, lv.ArrivalOffsetP99Ms, lv.DispatchLagP99Ms, lv.TokensPerSecond)
			}
		}
	}
	if f.asJSON {
		return writeJSON(out, levels)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tstreams\treq\tok\ttok/s\tTTFT err p50\tp99\tITL err p50\tp90\tp99\tmax\tlag p99\tCPU\tserver\taccurate\t")
	ceiling := clientbench.Ceilings(levels)
	var order []string
	for _, l := range levels {
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
		fmt.Fprintf(out, "accurate ceiling of %s: %d streams (ITL error p99 <= %s and dispatch lag p99 <= %s at this level and every lower one measured; server-bound levels do not count)\n",
			c, ceiling[c], clientbench.DefaultITLErrorP99, clientbench.DefaultDispatchLagP99)
	}
	return nil
}

// startBenchServer runs `spoc bench client --serve` pinned to the server CPUs
// and returns its URL.
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

func startBenchServer(ctx context.Context, stderr io.Writer, f *benchClientFlags) (string, int, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, fmt.Errorf("find own executable: %w", err)
	}
	args := []string{self, "bench", "client", "--serve", "127.0.0.1:0",
		"--first-token-delay", f.firstToken.String(), "--token-interval", f.interval.String()}
	if f.serverCPU != "" {
		if ts, err := exec.LookPath("taskset"); err == nil {
			args = append([]string{ts, "-c", f.serverCPU}, args...)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	c := exec.CommandContext(sctx, args[0], args[1:]...)
	c.Stderr = stderr
	c.Env = append(os.Environ(), pinnedEnv+"=1")
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 5 * time.Second
	stdout, err := c.StdoutPipe()
	if err != nil {
		cancel()
		return "", 0, nil, err
	}
	if err := c.Start(); err != nil {
		cancel()
		return "", 0, nil, fmt.Errorf("start test server: %w", err)
	}
	stop := func() { cancel(); _ = c.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("read test server address: %w", err)
	}
	// taskset execs the server in place, so the child's pid is the server's.
	return strings.TrimSpace(line), c.Process.Pid, stop, nil
}

func runExternal(ctx context.Context, url, name, command, cpus string, w clientbench.Workload) (*clientbench.Level, error) {
	if err := clientbench.ResetLog(ctx, url); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "spoc-bench-*.jsonl")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmdline := strings.NewReplacer("{url}", url, "{streams}", strconv.Itoa(w.Streams),
		"{warmup}", strconv.FormatFloat(w.Warmup.Seconds(), 'f', -1, 64),
		"{duration}", strconv.FormatFloat(w.Duration.Seconds(), 'f', -1, 64),
		"{max_tokens}", strconv.Itoa(w.MaxTokens), "{prompt_tokens}", strconv.Itoa(w.PromptTokens),
		"{out}", tmp.Name()).Replace(command)
	args := []string{"sh", "-c", cmdline}
	if cpus != "" {
		if ts, err := exec.LookPath("taskset"); err == nil {
			args = append([]string{ts, "-c", cpus}, args...)
		}
	}
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("run %q: %w", cmdline, err)
	}
	wall := time.Since(start)
	cpu := 0.0
	if ps := c.ProcessState; ps != nil && wall > 0 {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds() / wall.Seconds()
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []*result.Record
	var first time.Time
	if _, err := result.ReadAll(f, name, func(r *result.Record) error {
		recs = append(recs, r)
		if !r.Warmup && (first.IsZero() || r.Scheduled.Before(first)) {
			first = r.Scheduled
		}
		return nil
	}); err != nil {
		return nil, err
	}
	log, err := clientbench.FetchLog(ctx, url)
	if err != nil {
		return nil, err
	}
	lv := clientbench.Compare(name, w.Streams, recs, log, result.Window{Start: first, End: first.Add(w.Duration)})
	lv.SetCPU(cpu) // whole process lifetime, start-up included
	return lv, nil
}
