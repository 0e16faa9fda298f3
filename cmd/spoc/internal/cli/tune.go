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
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/tune"
)

func init() { register(newTuneCmd) }

type tuneFlags struct {
	config, out                          string
	dryRun, asJSON, quiet, keepArtifacts bool
}

// tuneKeys are the flags of spoc tune that set configuration keys.
var tuneKeys = keyFlags{
	{flag: "storage", key: "search.storage", value: storageYAML},
	{flag: "study", key: "search.study"},
	{flag: "trials", key: "search.trials"},
	{flag: "users", key: "search.users"},
	{flag: "engine", key: "engine.kind"},
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune -c FILE [--storage URL] [--study NAME] [--trials N] [--engine KIND] [--dry-run]",
		Short: "Search engine flags (TPE up to 100 trials, NSGA-II beyond): one server per trial, Pareto front under the SLA",
		Long: `Tune runs the study of the search section: every trial starts the engine with
flags sampled from search.space, loads it with the workload at search.users, and
scores it on search.objectives with the SLA clauses as constraints. A server that
runs out of memory or refuses its flags makes the trial INFEASIBLE; the study
goes on. The study is stored in --storage (SQLite in the output folder by
default, PostgreSQL to share it between several workers) and the same command
continues a stopped study up to its trial budget. Ctrl-C stops the running
server and leaves the study resumable. --dry-run prints what the first
generation would launch (command lines, manifests) without starting anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTune(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "configuration file; the reference case when empty")
	fl.String("storage", "", "study storage: sqlite:PATH (relative to the current directory, as in spoc study) or postgres://... (default search.storage, whose relative path is inside --out)")
	fl.String("study", "", "study name (default search.study)")
	fl.Int("trials", 0, "total trial budget of the study (default search.trials)")
	fl.Int("users", 0, "concurrent users every trial runs at; 0: the engine.params ceiling found by a short baseline sweep (default search.users)")
	fl.String("engine", "", "engine kind: sim, process or kubernetes (default engine.kind)")
	fl.StringVarP(&f.out, "out", "o", "spoc-out", "output folder: study database, one folder per trial")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what the first generation would launch, start nothing")
	fl.BoolVar(&f.asJSON, "json", false, "print the study result (or the dry run) as JSON; progress goes to stderr")
	fl.BoolVar(&f.quiet, "quiet", false, "no per-trial progress")
	fl.BoolVar(&f.keepArtifacts, "keep-artifacts", false, "keep per-trial records and telemetry of simulated trials too (always kept for real engines)")
	return cmd
}

func runTune(cmd *cobra.Command, f *tuneFlags) error {
	cfg, err := loadConfigWith(f.config, cmd.Flags(), tuneKeys)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	for _, n := range cfg.Notes() {
		fmt.Fprintln(stderr, n)
	}
	if w := cfg.Search.Warning(); w != "" {
		fmt.Fprintf(stderr, "spoc: warning: %s\n", w)
	}
	logger := stderrLogger(stderr)
	out := f.out
	if f.dryRun {
		out = "" // a dry run creates nothing
	}
	setup, err := cfg.Setup(config.SetupOptions{OutDir: out, Logger: logger})
	if err != nil {
		return usageError(err)
	}
	if !engine.Reconfigurable(setup.Launcher) {
		return usageError(capacity.ErrNotReconfigurable)
	}
	plan, err := tune.NewPlan(setup.Search)
	if err != nil {
		return usageError(err)
	}
	if f.dryRun {
		return tuneDryRun(cmd, f, plan, setup.Setup)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	// progress goes to stderr, results to stdout, with --json or without
	opts := capacity.TuneOptions{Logger: logger}
	if !f.quiet {
		prog := stderrProgress(stderr)
		defer prog.Close()
		showTuneProgress(prog, &opts, setup.Setup)
	}
	// A simulated trial is reproduced exactly by spoc sim run with its
	// flags, so its records (megabytes per trial) are kept only on request;
	// a real server's trial folder holds its records and cannot be redone.
	artifacts := filepath.Join(f.out, "trials")
	if setup.Virtual && !f.keepArtifacts {
		artifacts = ""
	}
	start := time.Now()
	opts.ArtifactsRoot = artifacts
	res, runErr := capacity.Tune(cmd.Context(), setup.Setup, opts)
	return tuneEnded(cmd, f.asJSON, res, plan, time.Since(start), runErr)
}

// tuneEnded prints the study's result, however the run ended.
func tuneEnded(cmd *cobra.Command, asJSON bool, res *tune.Result, plan *tune.Plan, took time.Duration, runErr error) error {
	if res == nil {
		if errors.Is(runErr, engine.ErrSetup) {
			return usageError(runErr)
		}
		return runErr
	}
	if asJSON {
		if err := writeJSON(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	} else if err := writeTuneResult(cmd.OutOrStdout(), res, plan, took); err != nil {
		return err
	}
	if res.Run.Interrupted {
		fmt.Fprintf(cmd.ErrOrStderr(), "spoc: tune interrupted; run the same command to continue study %q\n", res.Study)
	}
	return runErr
}

// tuneDryRun prints what the study's first generation would launch.
func tuneDryRun(cmd *cobra.Command, f *tuneFlags, plan *tune.Plan, s capacity.Setup) error {
	stdout := cmd.OutOrStdout()
	if !f.quiet {
		// the decisions a real run states before its first trial
		for _, line := range plan.Notes() {
			fmt.Fprintln(cmd.ErrOrStderr(), line)
		}
	}
	launches, err := tune.FirstGeneration(cmd.Context(), plan, s.Launcher, s.Search.Population, s.Search.Trials)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(stdout, launches)
	}
	return writeDryRun(stdout, s.Search, s.Deployment.Kind, launches)
}

// showTuneProgress renders a study's trials, baseline levels, notes and
// live runs with prog.
func showTuneProgress(prog *progress, opts *capacity.TuneOptions, s capacity.Setup) {
	opts.Progress = prog.trial
	levels := prog.sweepLevels(capacity.CandidateSweepOptions(s))
	opts.BaselineLevel = func(l capacity.Level, phase string) {
		prog.within("baseline")
		levels(l, phase)
	}
	opts.Notify = prog.note
	opts.Runs = prog.liveRun
}

func writeDryRun(w io.Writer, spec tune.Spec, kind string, launches []tune.Launch) error {
	at := ""
	if spec.Parallel > 1 {
		at = fmt.Sprintf(", %d at once (search.parallel)", spec.Parallel)
	}
	fmt.Fprintf(w, "study %q, %s engine: the first %d trials (of %d%s) would launch:\n", spec.Study, kind, len(launches), spec.Trials, at)
	for _, l := range launches {
		fmt.Fprintf(w, "\n# trial %d\n", l.Trial)
		if strings.Contains(l.Launch, "\n") {
			fmt.Fprint(w, l.Launch)
			if !strings.HasSuffix(l.Launch, "\n") {
				fmt.Fprintln(w)
			}
			continue
		}
		fmt.Fprintln(w, l.Launch)
	}
	return nil
}

func writeTuneResult(w io.Writer, res *tune.Result, plan *tune.Plan, took time.Duration) error {
	var states []string
	for _, s := range []string{"COMPLETE", "INFEASIBLE", "FAIL", "WAITING", "RUNNING"} {
		for st, n := range res.States {
			if string(st) == s && n > 0 {
				states = append(states, fmt.Sprintf("%s %d", s, n))
			}
		}
	}
	fmt.Fprintf(w, "\nstudy %q: %d trials (%s); this run: %d trials in %s\n", res.Study, len(res.Trials), strings.Join(states, ", "), res.Run.Ran, took.Round(time.Millisecond))
	if len(res.Front) == 0 {
		fmt.Fprintln(w, "no feasible trial yet: every complete trial violates the SLA, or none completed")
		return nil
	}
	fmt.Fprintf(w, "Pareto front (%d feasible trials, best first on %s):\n", len(res.Front), res.Objectives[0].Metric)
	names := make([]string, len(plan.Space.Params))
	for i, p := range plan.Space.Params {
		names[i] = p.Name
	}
	return tune.WriteFront(w, res, names)
}
