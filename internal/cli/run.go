package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
)

func init() { register(newRunCmd) }

type runFlags struct {
	config, target, out, apiKeyEnv, model, endpoint string
	users                                           int
	duration, warmup, ramp                          time.Duration
	thinkScale                                      float64
	asJSON, quiet, check                            bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --target URL --users N --duration D --out FILE",
		Short: "Run one load test against an OpenAI-compatible server; records to JSONL, summary and SLA verdict to stdout",
		Long: `Run drives closed-loop users executing the configured multi-turn workload
against --target, streams one JSON line per request to --out as requests finish
(a killed run leaves a valid prefix), and prints the summary of the measured
window. Latencies count from each request's scheduled send time. Ctrl-C stops
the run, flushes the records, prints what was measured and exits 130.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLoad(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "configuration file (workload, SLA, run settings); defaults when empty")
	fl.StringVar(&f.target, "target", "", "server base URL, e.g. http://localhost:8000 (default run.target)")
	fl.IntVar(&f.users, "users", 0, "concurrent closed-loop users (default run.users)")
	fl.DurationVar(&f.duration, "duration", 0, "measured window (default run.duration)")
	fl.DurationVar(&f.warmup, "warmup", 0, "warm-up before the measured window, excluded from the summary (default run.warmup)")
	fl.DurationVar(&f.ramp, "ramp", 0, "stagger user starts over this period (default run.ramp)")
	fl.Float64Var(&f.thinkScale, "think-time-scale", 0, "multiply think times; 0 sends turns back to back (default run.think_time_scale)")
	fl.StringVarP(&f.out, "out", "o", "", "records file (JSON lines), required")
	fl.StringVar(&f.apiKeyEnv, "api-key-env", "", "environment variable holding the API key (default run.api_key_env, OPENAI_API_KEY)")
	fl.StringVar(&f.model, "model", "", "model name in requests (default engine.served_model_name or engine.model)")
	fl.StringVar(&f.endpoint, "endpoint", "", "chat or completions (default run.endpoint)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	fl.BoolVar(&f.quiet, "quiet", false, "no live progress")
	fl.BoolVar(&f.check, "check", false, "exit 3 when the SLA is not met")
	return cmd
}

func runLoad(cmd *cobra.Command, f *runFlags) error {
	cfg, err := loadConfig(f.config)
	if err != nil {
		return err
	}
	rc := cfg.Run
	fl := cmd.Flags()
	if fl.Changed("target") {
		rc.Target = f.target
	}
	if fl.Changed("users") {
		rc.Users = f.users
	}
	if fl.Changed("duration") {
		rc.Duration = config.Duration(f.duration)
	}
	if fl.Changed("warmup") {
		rc.Warmup = config.Duration(f.warmup)
	}
	if fl.Changed("ramp") {
		rc.Ramp = config.Duration(f.ramp)
	}
	if fl.Changed("think-time-scale") {
		rc.ThinkTimeScale = f.thinkScale
	}
	if fl.Changed("api-key-env") {
		rc.APIKeyEnv = f.apiKeyEnv
	}
	if fl.Changed("endpoint") {
		rc.Endpoint = f.endpoint
	}
	switch {
	case rc.Target == "":
		return usageErrorf("run needs --target URL (or run.target in the config)")
	case f.out == "":
		return usageErrorf("run needs --out FILE for the records")
	case rc.Users < 1:
		return usageErrorf("--users must be at least 1, got %d", rc.Users)
	case rc.Duration <= 0:
		return usageErrorf("--duration must be positive")
	case rc.Warmup < 0 || rc.Ramp < 0 || rc.ThinkTimeScale < 0:
		return usageErrorf("--warmup, --ramp and --think-time-scale must not be negative")
	}
	if err := checkTargetURL(rc.Target); err != nil {
		return usageError(err)
	}
	stderr := cmd.ErrOrStderr()
	if rc.Ramp > rc.Warmup {
		fmt.Fprintf(stderr, "spoc: warning: ramp (%s) is longer than warm-up (%s); the measured window starts before every user is running\n", rc.Ramp, rc.Warmup)
	}
	// The server is not spoc's: the run is an evaluation on an external
	// engine at that address, like any other engine's.
	cfg.Run = rc
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = rc.Target
	if f.model != "" {
		cfg.Engine.ServedModelName = f.model
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	setup, err := cfg.Setup(config.SetupOptions{Logger: logger})
	if err != nil {
		return usageError(err)
	}
	ev, err := capacity.NewEvaluator(setup.Setup, logger)
	if err != nil {
		return usageError(err)
	}
	defer ev.Close(cmd.Context())
	// A records file this run creates is removed when the run fails before
	// its first record; a path that existed is never removed, and one that
	// is not a regular file (a pipe, /dev/null) gets no sidecar beside it.
	_, statErr := os.Stat(f.out)
	created := errors.Is(statErr, os.ErrNotExist)
	file, err := os.Create(f.out)
	if err != nil {
		return fmt.Errorf("create records file: %w", err)
	}
	out := capacity.Outputs{Records: file}
	var progress *progressLine
	if !f.quiet {
		w := setup.Windows.Run
		progress = &progressLine{w: stderr, users: rc.Users, tty: isTerminal(stderr), start: time.Now(), total: w.Warmup + w.Duration}
		out.Progress = progress.show
	}
	res, runErr := ev.Evaluate(cmd.Context(), nil, setup.Windows.Run, out)
	progress.clear()
	closeErr := file.Close()
	interrupted := runErr != nil && res != nil && res.Interrupted
	if runErr != nil && !interrupted {
		// A run that failed before its first record leaves no empty file.
		if st, err := os.Stat(f.out); created && err == nil && st.Mode().IsRegular() && st.Size() == 0 {
			os.Remove(f.out)
		}
		return fmt.Errorf("run against %s: %w", rc.Target, runErr)
	}
	if closeErr != nil {
		return fmt.Errorf("records %s: %w", f.out, closeErr)
	}
	if st, err := os.Stat(f.out); !interrupted && (err != nil || !st.Mode().IsRegular()) {
		fmt.Fprintf(stderr, "spoc: %s is not a regular file: no %s sidecar written, so spoc summarize of a copy cannot tell the run's window or provenance\n", f.out, filepath.Base(result.RunInfoPath(f.out)))
	} else if !interrupted {
		// the window and provenance travel with the records, for summarize
		prov, _ := json.Marshal(res.Provenance)
		info := result.RunInfo{Window: result.Window{Start: res.Summary.Window.Start, End: res.Summary.Window.End}, Users: rc.Users, Provenance: prov}
		if err := writeAtomic(result.RunInfoPath(f.out), func(w io.Writer) error { return result.WriteRunInfo(w, info) }); err != nil {
			return fmt.Errorf("records %s: %w", f.out, err)
		}
	}
	if f.asJSON {
		// the summary's fields, and where they were measured
		if err := writeJSON(cmd.OutOrStdout(), struct {
			*result.Result
			Provenance capacity.Provenance `json:"provenance"`
		}{res.Summary, res.Provenance}); err != nil {
			return err
		}
	} else {
		if err := result.WriteText(cmd.OutOrStdout(), res.Summary); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "source: %s\n", provenanceLine(res.Provenance))
	}
	if !interrupted && res.Summary.Overall.Requests == 0 && res.Summary.Excluded > 0 {
		w := res.Summary.Window
		fmt.Fprintf(stderr, "spoc: hint: no user started a turn inside the %s window: replies or think times are longer than it (%d records, all outside it); lengthen --duration (and --warmup) beyond a whole turn plus its think time\n",
			w.End.Sub(w.Start).Round(time.Millisecond), res.Summary.Excluded)
	}
	if interrupted {
		fmt.Fprintf(stderr, "spoc: interrupted; %d records in %s\n", res.Scheduled, f.out)
		return &ExitError{Code: ExitInterrupted}
	}
	if f.check && !res.Pass {
		return &ExitError{Code: ExitSLANotMet}
	}
	return nil
}

// checkTargetURL rejects a --target that is not an http(s) base URL: without
// the check "localhost:8000" is accepted and every request fails with
// "unsupported protocol scheme", which reads as an overloaded server.
func checkTargetURL(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("--target %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--target %q: want an http:// or https:// base URL, e.g. http://localhost:8000", target)
	}
	return nil
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

// provenanceLine says where a run's numbers come from, for text output.
func provenanceLine(p capacity.Provenance) string {
	s := p.Source + " on the " + p.Engine + " engine"
	if p.Endpoint != "" {
		s += " at " + p.Endpoint
	}
	if p.Version != "" {
		s += ", server version " + p.Version
	}
	if p.Launch != "" && p.Launch != p.Endpoint {
		s += " (" + p.Launch + ")"
	}
	return s
}
