package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/tune"
)

func init() { register(newSweepCmd) }

// sweepKeys are the flags of spoc sweep that set configuration keys.
var sweepKeys = keyFlags{
	{flag: "users", key: "sweep.users", value: listYAML},
	{flag: "repeats", key: "sweep.repeats"},
	{flag: "seeds", key: "sweep.seeds"},
	{flag: "precision", key: "sweep.precision"},
	{flag: "max-runs", key: "sweep.max_runs"},
	{flag: "clients", key: "run.clients"},
}

type sweepFlags struct {
	config, params, out string
	trial               int
	asJSON, quiet       bool
}

func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep -c FILE [--params k=v,...|--trial N] [--users LIST] [--repeats R] [--seeds S]",
		Short: "Sweep one configuration over user counts to its capacity ceiling",
		Long: `Sweep runs one engine configuration at increasing user counts — a coarse grid
(sweep.users, or doubling from sweep.start), then bisection between the last
passing and first failing count down to max(sweep.resolution_users,
sweep.resolution_fraction) — each with a warm-up and a measured window. The
walk's ceiling is the largest count meeting the SLA. Then, with sweep.precision
(--precision, default 10%), runs on fresh workload seeds around the knee
estimate the capacity — the user count at which the binding SLA clause's
expected share of requests over its limit reaches the share it allows — until
its 95 % confidence interval is that narrow or sweep.max_runs (--max-runs) is
spent; the spread of one run's verdict over seeds is stated beside it. With
--precision 0 and sweep.seeds (--seeds) above 1, every other workload seed
finds its own ceiling instead, and the ceiling is stated with the 95 %
interval where a sweep with another seed would land. The configuration is
engine.params, overridden by --params, or the parameters of study trial --trial.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "plan configuration; the reference case when empty")
	fl.StringVar(&f.params, "params", "", "engine flags over engine.params, e.g. max-num-batched-tokens=2048,enable-prefix-caching=false")
	fl.IntVar(&f.trial, "trial", -1, "use the parameters of this trial number of the study (search.storage, relative to --out); unset: engine.params")
	fl.String("users", "", "coarse grid of user counts, e.g. 50,100,200,400")
	fl.Int("repeats", 1, "runs per user count, each with its own workload seed")
	fl.Int("seeds", 5, "with --precision 0: workload seeds the ceiling's interval is measured with (sweep.seeds); 1: no interval")
	fl.String("precision", "10%", "the capacity estimate's precision target (sweep.precision): its 95 % interval's half-width, e.g. 5%; 0: no estimate")
	fl.Int("max-runs", 30, "most runs on fresh workload seeds the estimate makes (sweep.max_runs)")
	fl.Int("clients", 1, "client processes that split each live run's users (run.clients)")
	fl.StringVarP(&f.out, "out", "o", "spoc-out", "folder of the study (for --trial) and of the sweep's records")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fl.BoolVar(&f.quiet, "quiet", false, "no per-level progress")
	return cmd
}

func runSweep(cmd *cobra.Command, f *sweepFlags) error {
	cfg, err := loadConfigWith(f.config, cmd.Flags(), sweepKeys)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	logger := stderrLogger(stderr)
	setup, err := cfg.Setup(config.SetupOptions{OutDir: f.out, NamePrefix: "spoc-sweep", Logger: logger})
	if err != nil {
		return usageError(err)
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageErrorf("--params: %v", err)
	}
	if f.trial >= 0 {
		if f.params != "" {
			return usageErrorf("--params and --trial exclude each other")
		}
		if params, err = tune.TrialParams(cmd.Context(), setup.Search, f.trial); errors.Is(err, tune.ErrNoTrial) {
			return usageError(err)
		} else if err != nil {
			return err
		}
	}
	run := capacity.SweepRun{Logger: logger}
	if !f.quiet {
		prog := stderrProgress(stderr)
		defer prog.Close()
		prog.begin("sweep", 0, 0, 0, false)
		run.Progress = prog.sweepLevels(setup.Sweep.SweepOptions)
		run.Runs = prog.liveRun
		run.SeedProgress = func(sc capacity.SeedCeiling) {
			fmt.Fprintf(stderr, "seed %d: ceiling %d users (first failing %d; %d levels)\n", sc.Seed, sc.Ceiling, sc.FirstFailing, sc.Runs)
		}
	}
	if f.out != "" {
		run.RecordsDir = filepath.Join(f.out, "records")
	}
	res, err := capacity.SweepOne(cmd.Context(), setup.Setup, params, run)
	if errors.Is(err, capacity.ErrBadParams) {
		return usageErrorf("--params: %v", err)
	}
	if err != nil {
		return err
	}
	if f.asJSON {
		for i := range res.Levels {
			for j := range res.Levels[i].Repeats {
				res.Levels[i].Repeats[j].Detail = nil
			}
		}
		return writeJSON(cmd.OutOrStdout(), struct {
			*capacity.SweepResult
			Provenance capacity.Provenance `json:"provenance"`
		}{res, res.Provenance()})
	}
	writeSweepResult(cmd.OutOrStdout(), res, cfg.Sweep.Repeats)
	return nil
}

// writeSweepResult prints a sweep's ceiling, its interval and what bound it.
func writeSweepResult(w io.Writer, res *capacity.SweepResult, repeats int) {
	writeEstimate(w, capacityLines{est: res.Estimate, noEstimate: res.NoEstimate, refinement: res.Refinement, runs: res.RunsMade,
		engineSeconds: res.EngineSeconds, live: res.Provenance().Source == capacity.SourceLive})
	if res.Estimate != nil {
		fmt.Fprintf(w, "walk: ceiling %d users on workload.seed (resolution %d)\n", res.Ceiling, res.Resolution)
	} else {
		fmt.Fprintf(w, "capacity ceiling: %d users (resolution %d)\n", res.Ceiling, res.Resolution)
	}
	if res.Unconfirmed {
		fmt.Fprintf(w, "unconfirmed: %d users met the SLA on too few samples to be judged; the ceiling is the largest judged count (lengthen sweep.duration)\n", res.UnconfirmedUsers)
	}
	if iv := res.Interval; iv != nil {
		fmt.Fprintf(w, "interval: [%d, %d] users: %.0f %% of sweeps with another workload seed land there (%d seeds, mean %.1f, sd %.1f)\n", iv.Lo, iv.Hi, 100*iv.Confidence, len(iv.Seeds), iv.MeanUsers, iv.StdDevUsers)
	} else if res.NoInterval != "" {
		fmt.Fprintf(w, "interval: none (%s)\n", res.NoInterval)
	}
	if m := res.Margin; m != nil {
		fmt.Fprintf(w, "binding clause: %s %s: %s at the ceiling, %.0f %% below its limit %s\n", m.Scope, m.Clause, m.Format(m.AtCeiling), 100*m.Headroom, m.Format(m.Limit))
	}
	fmt.Fprintf(w, "source: %s\n", res.Provenance().String())
	if res.FirstFailing > 0 {
		fmt.Fprintf(w, "first failing: %d users: %s\n", res.FirstFailing, res.FailedClause)
	} else {
		top := 0
		for _, l := range res.Levels {
			top = max(top, l.Users)
		}
		fmt.Fprintf(w, "no level failed; the most users tested was %d: the ceiling is at least that\n", top)
	}
	if res.Knee > 0 {
		fmt.Fprintf(w, "throughput knee: %d users\n", res.Knee)
	}
	if repeats > 1 {
		fmt.Fprintf(w, "repeats: %d per level, largest throughput spread %.1f%%\n", repeats, 100*res.Spread)
	}
}

// parseParams reads k=v,k=v with ints, floats and booleans typed.
func parseParams(s string) (map[string]any, error) {
	m := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not name=value", kv)
		}
		v = strings.TrimSpace(v)
		if i, err := strconv.Atoi(v); err == nil {
			m[k] = i
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[k] = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			m[k] = b
		} else {
			m[k] = v
		}
	}
	return m, nil
}
