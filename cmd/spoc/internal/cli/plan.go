package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/plan"
)

func init() { register(newPlanCmd) }

// planKeys are the flags of spoc plan that set configuration keys.
var planKeys = keyFlags{
	{flag: "clients", key: "run.clients"},
}

type planFlags struct {
	config, out            string
	quick, compare, asJSON bool
	quiet, estimate        bool
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan [-c FILE] [--out DIR] [--quick] [--compare]",
		Short: "Run the whole methodology: workload → baseline → tune → choose → sweep → default → trace → report",
		Long: `Plan answers "how many users?" end to end. It inspects the workload, sweeps the
configured flags (the baseline), runs the study over the engine flags (TPE or NSGA-II),
gives the best feasible Pareto-front members a sweep and chooses the one with the highest
ceiling, sweeps it and estimates its capacity to sweep.precision (a 95 % confidence
interval from runs on fresh workload seeds near the knee, with the spread over seeds),
estimates the configured flags' capacity the same way to say what tuning gained, analyses a kernel
trace when one is configured, compares hardware with --compare, and writes
DIR/summary.json, DIR/report.html and DIR/summary.md beside the study and the sweep's
records. With no configuration it plans the reference case (gpt-oss-120b on 4× H100) on
the built-in simulator in virtual time.

plan.fidelity says where the phases run: live (every phase on the engine), simulated
(every phase on the simulator of the configured deployment) or multi (the default for an
engine spoc starts: live probes calibrate the simulator, the search runs in it, the top
configurations are verified live and the final sweep is live). --estimate prints the
engine time each fidelity would take before anything runs (docs/fidelity.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "plan configuration; the reference case when empty")
	fl.StringVarP(&f.out, "out", "o", "spoc-out", "output folder")
	fl.BoolVar(&f.quick, "quick", false, "smoke run: few trials, short windows (< 30 s on the simulator)")
	fl.BoolVar(&f.compare, "compare", false, "also sweep the chosen configuration on engine.compare targets (default 4× H100 vs 2× H200)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fl.Int("clients", 1, "client processes that split each live run's users (run.clients)")
	fl.BoolVar(&f.estimate, "estimate", false, "print the engine time each plan.fidelity would take for this configuration, and run nothing else")
	return cmd
}

func runPlan(cmd *cobra.Command, f *planFlags) error {
	cfg, err := loadConfigWith(f.config, cmd.Flags(), planKeys)
	if err != nil {
		return err
	}
	if w := cfg.Search.Warning(); w != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "spoc: warning: %s\n", w)
	}
	var events func(plan.Event)
	if !f.quiet {
		prog := stderrProgress(cmd.ErrOrStderr())
		defer prog.Close()
		events = prog.planEvents
	}
	logger := stderrLogger(cmd.ErrOrStderr())
	// --estimate counts for the configured engine, whatever
	// plan.fidelity; the plan runs on its fidelity's engine
	setup, err := cfg.Setup(config.SetupOptions{OutDir: f.out, Quick: f.quick, Compare: f.compare, Plan: !f.estimate, Logger: logger})
	if err != nil {
		return usageError(err)
	}
	if f.estimate {
		return planEstimate(cmd.Context(), cmd.OutOrStdout(), estimateProgress(f.quiet, cmd.ErrOrStderr()), setup, logger, f.asJSON)
	}
	dirs := snapshotOutDirs(f.out)
	d, err := plan.Run(cmd.Context(), setup, plan.Options{Events: events, Logger: logger, Version: Version})
	if err != nil {
		// A failed plan writes no summary: the previous plan's
		// files in out stay as they were, no capacity is printed,
		// and the empty folders it created are removed.
		created, removed := dirs.removeCreatedEmpty()
		if errors.Is(err, engine.ErrSetup) || errors.Is(err, plan.ErrBudget) {
			return usageError(err)
		}
		return planFailed(cmd.Context(), cmd.ErrOrStderr(), f.out, created, removed, err)
	}
	if err := writeReport(f.out, d, planFormats(cfg.Report.Formats)); err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), d)
	}
	writePlanResult(cmd.OutOrStdout(), d, f.out)
	return nil
}

// writePlanResult prints a plan's capacity, where it came from and where
// its report is.
func writePlanResult(w io.Writer, d *plan.Summary, out string) {
	c := d.Capacity
	if writeEstimate(w, capacityLines{est: c.Estimate, noEstimate: c.NoEstimate, refinement: c.Refinement, runs: c.Runs,
		engineSeconds: c.EngineSeconds, live: c.Provenance.Source == capacity.SourceLive}) {
		fmt.Fprintf(w, "walk: ceiling %d users on workload.seed", c.Ceiling)
	} else if iv := d.Capacity.CeilingInterval; iv != nil {
		fmt.Fprintf(w, "capacity ceiling: %d [%d, %d] users (%.0f %% interval over %d workload seeds)", d.Capacity.Users, iv.Lo, iv.Hi, 100*iv.Confidence, len(iv.Seeds))
	} else {
		fmt.Fprintf(w, "capacity ceiling: %d users", d.Capacity.Users)
	}
	if d.Capacity.Unconfirmed {
		fmt.Fprintf(w, " (unconfirmed above it: %d users met the SLA on too few samples to be judged)", d.Capacity.UnconfirmedUsers)
	}
	if d.Capacity.FirstFailingUsers > 0 {
		fmt.Fprintf(w, " (at %d users: %s)", d.Capacity.FirstFailingUsers, d.Capacity.FailedClause)
	}
	fmt.Fprintf(w, "\nsource: %s\n", d.Capacity.Provenance.String())
	if d.Capacity.ServeCommand == "" && d.Capacity.ServerFlags != "" {
		fmt.Fprintf(w, "configuration: %s\n", d.Capacity.ServerFlags)
	} else {
		fmt.Fprintf(w, "configuration: %s\n", d.Capacity.ServeCommand)
	}
	if tv := d.TunedVsDefault; tv != nil {
		fmt.Fprintf(w, "tuned vs default: %s\n", tv.Verdict)
	}
	for _, r := range d.Compare {
		fmt.Fprintf(w, "  %-10s %4d users  %6.1f users/GPU  ratio %.2f", r.Name, r.Users, r.UsersPerGPU, r.Ratio)
		if r.Unconfirmed {
			fmt.Fprint(w, "  (unconfirmed: too few samples)")
		}
		fmt.Fprintln(w)
	}
	if d.Cost != nil {
		for _, line := range d.Cost.Fleet.Lines() {
			fmt.Fprintln(w, line)
		}
	}
	if d.Day != nil {
		for _, line := range d.Day.Lines() {
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintf(w, "report: %s\n", filepath.Join(out, "report.html"))
}

// planFormats are the files spoc plan writes: summary.json always, since
// spoc report DIR renders again from it, and the formats report.formats
// names (all when it names none).
func planFormats(configured []string) []string {
	if len(configured) == 0 {
		return nil
	}
	return append([]string{"json"}, configured...)
}

// planFailed says how a plan ended without a capacity: interrupted (exit
// 130) or failed (exit 1), naming the phase (the error's first word) and,
// for a server that did not come up, the end of its log. The previous
// report in out is untouched either way; created and removed say whether
// the plan created out and whether it was removed, being empty.
func planFailed(ctx context.Context, stderr io.Writer, out string, created, removed bool, err error) error {
	// say "unchanged" only of a report that exists
	previous := "no report was written to " + out
	switch _, serr := os.Stat(filepath.Join(out, "report.html")); {
	case removed:
		previous = "no report was written, and the empty folder " + out + " this plan created was removed"
	case created:
		previous = "no report was written; " + out + " keeps only what this plan logged there (server logs, the study)"
	case serr == nil:
		previous = "the previous report in " + out + " is unchanged"
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		fmt.Fprintf(stderr, "spoc: plan interrupted (%v); no capacity established; %s\n", err, previous)
		return &ExitError{Code: ExitInterrupted}
	}
	var f *engine.Failure
	if errors.As(err, &f) && f.Log != "" {
		if tail := engine.LogTail(f.Log, 15); tail != "" {
			err = fmt.Errorf("%w\nlast lines of %s:\n%s", err, f.Log, tail)
		}
	}
	return fmt.Errorf("plan failed, no capacity established (%s): %w", previous, err)
}
