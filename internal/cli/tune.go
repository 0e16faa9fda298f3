package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
	config, storage, study, engineKind, out string
	trials, users                           int
	dryRun, asJSON, quiet, keepArtifacts    bool
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
	fl.StringVar(&f.storage, "storage", "", "study storage: sqlite:PATH (relative to the current directory, as in spoc study) or postgres://... (default search.storage, whose relative path is inside --out)")
	fl.StringVar(&f.study, "study", "", "study name (default search.study)")
	fl.IntVar(&f.trials, "trials", 0, "total trial budget of the study (default search.trials)")
	fl.IntVar(&f.users, "users", 0, "concurrent users every trial runs at; 0: the engine.params ceiling found by a short baseline sweep (default search.users)")
	fl.StringVar(&f.engineKind, "engine", "", "engine kind: sim, process or kubernetes (default engine.kind)")
	fl.StringVarP(&f.out, "out", "o", "spoc-out", "output folder: study database, one folder per trial")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what the first generation would launch, start nothing")
	fl.BoolVar(&f.asJSON, "json", false, "print the study result (or the dry run) as JSON; progress goes to stderr")
	fl.BoolVar(&f.quiet, "quiet", false, "no per-trial progress")
	fl.BoolVar(&f.keepArtifacts, "keep-artifacts", false, "keep per-trial records and telemetry of simulated trials too (always kept for real engines)")
	return cmd
}

func runTune(cmd *cobra.Command, f *tuneFlags) error {
	cfg, err := loadConfig(f.config)
	if err != nil {
		return err
	}
	fl := cmd.Flags()
	if fl.Changed("storage") {
		if cfg.Search.Storage, err = resolveStorageFlag(f.storage); err != nil {
			return err
		}
	}
	if fl.Changed("study") {
		cfg.Search.Study = f.study
	}
	if fl.Changed("trials") {
		cfg.Search.Trials = f.trials
		if f.trials >= 1 && cfg.Search.Parallel > f.trials {
			// a smaller budget than search.parallel runs every trial at once
			fmt.Fprintf(cmd.ErrOrStderr(), "search.parallel %d lowered to %d: --trials %d has no more trials to run at once\n", cfg.Search.Parallel, f.trials, f.trials)
			cfg.Search.Parallel = f.trials
		}
	}
	if fl.Changed("users") {
		cfg.Search.Users = f.users
	}
	if fl.Changed("engine") {
		if !slices.Contains(config.EngineKinds, f.engineKind) {
			return usageErrorf("--engine: unknown kind %q (one of %s)", f.engineKind, strings.Join(config.EngineKinds, ", "))
		}
		cfg.Engine.Kind = f.engineKind
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
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
		if !f.quiet {
			// the decisions a real run states before its first trial
			for _, line := range plan.Notes() {
				fmt.Fprintln(stderr, line)
			}
		}
		launches, err := tune.FirstGeneration(cmd.Context(), plan, setup.Launcher, setup.Search.Population, setup.Search.Trials)
		if err != nil {
			return err
		}
		if f.asJSON {
			return writeJSON(stdout, launches)
		}
		return writeDryRun(stdout, setup.Search, setup.Deployment.Kind, launches)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	// progress goes to stderr, results to stdout, with --json or without
	opts := capacity.TuneOptions{Logger: logger}
	if !f.quiet {
		prog := stderrProgress(stderr)
		defer prog.Close()
		opts.Progress = prog.trial
		levels := prog.sweepLevels(capacity.CandidateSweepOptions(setup.Setup))
		opts.BaselineLevel = func(l capacity.Level, phase string) {
			prog.within("baseline")
			levels(l, phase)
		}
		opts.Notify = prog.note
		opts.Runs = prog.liveRun
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
	if res == nil {
		if errors.Is(runErr, engine.ErrSetup) {
			return usageError(runErr)
		}
		return runErr
	}
	if f.asJSON {
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	} else if err := writeTuneResult(stdout, res, plan, time.Since(start)); err != nil {
		return err
	}
	if res.Run.Interrupted {
		fmt.Fprintf(stderr, "spoc: tune interrupted; run the same command to continue study %q\n", res.Study)
	}
	return runErr
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
