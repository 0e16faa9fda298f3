package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

func init() { register(newRunCmd) }

type runFlags struct {
	config, out          string
	asJSON, quiet, check bool
}

// runKeys are the flags of spoc run that set configuration keys.
var runKeys = keyFlags{
	{flag: "target", key: "run.target"},
	{flag: "users", key: "run.users"},
	{flag: "duration", key: "run.duration"},
	{flag: "warmup", key: "run.warmup"},
	{flag: "ramp", key: "run.ramp"},
	{flag: "think-time-scale", key: "run.think_time_scale"},
	{flag: "api-key-env", key: "run.api_key_env"},
	{flag: "model", key: "engine.served_model_name"},
	{flag: "endpoint", key: "run.endpoint"},
	{flag: "clients", key: "run.clients"},
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --target URL --users N --duration D --out FILE",
		Short: "Run one load test against an OpenAI-compatible server; records to JSONL, summary and SLA verdict to stdout",
		Long: `Run drives closed-loop users executing the configured multi-turn workload
against --target, streams one JSON line per request to a temporary file beside
--out as requests finish, and prints the summary of the measured window. The
records replace --out when the run ends with records (a failed preflight
leaves an existing --out as it was; a killed run leaves a valid prefix in the
temporary file, never half a file under --out), with FILE.run.json beside them
for spoc summarize. Latencies count from each request's scheduled send time.
Ctrl-C stops the run, keeps the records, prints what was measured and exits 130.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLoad(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "configuration file (workload, SLA, run settings); defaults when empty")
	fl.String("target", "", "server base URL, e.g. http://localhost:8000 (default run.target)")
	fl.Int("users", 0, "concurrent closed-loop users (default run.users)")
	fl.Duration("duration", 0, "measured window (default run.duration)")
	fl.Duration("warmup", 0, "warm-up before the measured window, excluded from the summary (default run.warmup)")
	fl.Duration("ramp", 0, "stagger user starts over this period (default run.ramp)")
	fl.Float64("think-time-scale", 0, "multiply think times; 0 sends turns back to back (default run.think_time_scale)")
	fl.StringVarP(&f.out, "out", "o", "", "records file (JSON lines), required")
	fl.String("api-key-env", "", "environment variable holding the API key (default run.api_key_env; none: no key is sent)")
	fl.String("model", "", "model name in requests (default engine.served_model_name or engine.model)")
	fl.String("endpoint", "", "chat or completions (default run.endpoint)")
	fl.Int("clients", 1, "client processes that split the users and drive the run together, records merged (run.clients)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	fl.BoolVar(&f.quiet, "quiet", false, "no live progress")
	fl.BoolVar(&f.check, "check", false, "exit 3 when the SLA is not met")
	return cmd
}

func runLoad(cmd *cobra.Command, f *runFlags) error {
	cfg, err := loadConfigWith(f.config, cmd.Flags(), runKeys)
	if err != nil {
		return err
	}
	if err := cfg.UseRunTarget(); err != nil {
		return usageError(err)
	}
	if f.out == "" {
		return usageErrorf("run needs --out FILE for the records")
	}
	stderr := cmd.ErrOrStderr()
	if w := cfg.Run.Warning(); w != "" {
		fmt.Fprintf(stderr, "spoc: warning: %s\n", w)
	}
	logger := stderrLogger(stderr)
	setup, err := cfg.Setup(config.SetupOptions{Logger: logger})
	if err != nil {
		return usageError(err)
	}
	opts := capacity.RunOptions{Records: f.out, Logger: logger}
	var progress *progressLine
	if !f.quiet {
		w := setup.Windows.Run
		progress = &progressLine{w: stderr, users: w.Users, tty: isTerminal(stderr), start: time.Now(), total: w.Warmup + w.Duration}
		opts.Progress = progress.show
	}
	res, runErr := capacity.Run(cmd.Context(), setup.Setup, opts)
	progress.clear()
	if errors.Is(runErr, capacity.ErrBadSetup) {
		return usageError(runErr)
	}
	if res == nil {
		return fmt.Errorf("run against %s: %w", cfg.Run.Target, runErr)
	}
	if res.NoRunInfo != "" {
		fmt.Fprintf(stderr, "spoc: %s is %s: no %s sidecar written, so spoc summarize of a copy cannot tell the run's window or provenance\n", f.out, res.NoRunInfo, filepath.Base(result.RunInfoPath(f.out)))
	}
	if err := writeRunResult(cmd.OutOrStdout(), res.Evaluation, f.asJSON); err != nil {
		return err
	}
	if res.Interrupted {
		if res.Kept {
			fmt.Fprintf(stderr, "spoc: interrupted; %d records in %s\n", res.Scheduled, f.out)
		} else {
			fmt.Fprintf(stderr, "spoc: interrupted; no record written, %s is as it was\n", f.out)
		}
		return &ExitError{Code: ExitInterrupted}
	}
	if s := res.Summary; s.Overall.Requests == 0 && s.Excluded > 0 {
		fmt.Fprintf(stderr, "spoc: hint: no user started a turn inside the %s window: replies or think times are longer than it (%d records, all outside it); lengthen --duration (and --warmup) beyond a whole turn plus its think time\n",
			s.Window.End.Sub(s.Window.Start).Round(time.Millisecond), s.Excluded)
	}
	if f.check && !res.Pass {
		return &ExitError{Code: ExitSLANotMet}
	}
	return nil
}

// writeRunResult prints a run's summary and where it was measured.
func writeRunResult(w io.Writer, ev *capacity.Evaluation, asJSON bool) error {
	if asJSON {
		// the summary's fields, and where they were measured
		return writeJSON(w, struct {
			*result.Result
			Provenance      capacity.Provenance    `json:"provenance"`
			Sessions        *workload.SessionStats `json:"sessions,omitempty"`
			NoServerMetrics string                 `json:"no_server_metrics,omitempty"`
		}{ev.Summary, ev.Provenance, ev.Sessions, ev.NoServerMetrics})
	}
	if err := result.WriteText(w, ev.Summary); err != nil {
		return err
	}
	if ev.Sessions != nil {
		fmt.Fprintln(w, sessionsLine(ev.Sessions))
	}
	if ev.NoServerMetrics != "" {
		fmt.Fprintf(w, "telemetry: %s\n", ev.NoServerMetrics)
	}
	_, err := fmt.Fprintf(w, "source: %s\n", ev.Provenance.String())
	return err
}

// sessionsLine says what an open-loop run's arrivals made of concurrency.
func sessionsLine(st *workload.SessionStats) string {
	return fmt.Sprintf("open-loop sessions: %d arrived, %d ended before the window's end; in progress: mean %.1f over the window, peak %d",
		st.Arrived, st.Completed, st.MeanActive, st.PeakActive)
}

func printSummary(w io.Writer, res *result.Result, asJSON bool) error {
	if asJSON {
		return writeJSON(w, res)
	}
	return result.WriteText(w, res)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressLine shows the live client's counters with the run's elapsed
// time and its ETA (the run's length is known: warm-up plus the measured
// window). On a terminal the line is redrawn in place every second; off one
// a line is printed every runProgressEvery.
type progressLine struct {
	w            io.Writer
	users        int
	tty          bool
	start        time.Time
	total        time.Duration
	shown        bool
	printedAt    time.Time
	printedFirst bool
}

// runProgressEvery is how often spoc run prints its counters off a terminal.
const runProgressEvery = 30 * time.Second

func (p *progressLine) show(pr loadgen.Progress) {
	now := time.Now()
	elapsed := now.Sub(p.start)
	line := fmt.Sprintf("%s/%s ETA %s  users %d/%d  in flight %d  done %d  errors %d  cancelled %d  TTFT p95 %s  ITL p95 %s",
		clock(elapsed), clock(p.total), clock(max(p.total-elapsed, 0)),
		pr.ActiveUsers, p.users, pr.InFlight, pr.Requests, pr.Errors, pr.Cancelled, roundDur(pr.TTFTp95), roundDur(pr.ITLp95))
	if !p.tty {
		if p.printedFirst && now.Sub(p.printedAt) < runProgressEvery {
			return
		}
		p.printedFirst, p.printedAt = true, now
		fmt.Fprintln(p.w, strings.TrimSpace(line))
		return
	}
	fmt.Fprint(p.w, "\r\033[K"+strings.TrimSpace(line))
	p.shown = true
}

// clear removes the status line; a nil line does nothing.
func (p *progressLine) clear() {
	if p != nil && p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func roundDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(100 * time.Microsecond).String()
	}
}
