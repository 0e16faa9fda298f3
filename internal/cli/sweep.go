package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/tune"
)

func init() { register(newSweepCmd) }

func newSweepCmd() *cobra.Command {
	var (
		file, paramsFlag, usersFlag, out string
		trial, repeats, seeds            int
		asJSON, quiet                    bool
	)
	cmd := &cobra.Command{
		Use:   "sweep -c FILE [--params k=v,...|--trial N] [--users LIST] [--repeats R] [--seeds S]",
		Short: "Sweep one configuration over user counts to its capacity ceiling",
		Long: `Sweep runs one engine configuration at increasing user counts — a coarse grid
(sweep.users, or doubling from sweep.start), then bisection between the last
passing and first failing count down to max(sweep.resolution_users,
sweep.resolution_fraction) — each with a warm-up and a measured window. The
capacity ceiling is the largest count meeting the SLA. The configuration is
engine.params, overridden by --params, or the parameters of study trial --trial.
With sweep.seeds (--seeds) above 1, every other workload seed finds its own
ceiling starting from that one, and the ceiling is stated with the 95 %
interval where a sweep with another seed would land.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(file)
			if err != nil {
				return err
			}
			if usersFlag != "" {
				us, err := parseUsers(usersFlag)
				if err != nil {
					return usageErrorf("--users: %v", err)
				}
				cfg.Sweep.Users = us
			}
			if cmd.Flags().Changed("repeats") {
				cfg.Sweep.Repeats = repeats
			}
			if cmd.Flags().Changed("seeds") {
				cfg.Sweep.Seeds = seeds
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			setup, err := cfg.Setup(config.SetupOptions{OutDir: out, NamePrefix: "spoc-sweep", Logger: logger})
			if err != nil {
				return usageError(err)
			}
			params, err := parseParams(paramsFlag)
			if err != nil {
				return usageErrorf("--params: %v", err)
			}
			if trial >= 0 {
				if paramsFlag != "" {
					return usageErrorf("--params and --trial exclude each other")
				}
				if params, err = tune.TrialParams(cmd.Context(), setup.Search, trial); errors.Is(err, tune.ErrNoTrial) {
					return usageError(err)
				} else if err != nil {
					return err
				}
			}
			run := capacity.SweepRun{Logger: logger}
			if !quiet {
				prog := stderrProgress(cmd.ErrOrStderr())
				defer prog.Close()
				prog.begin("sweep", 0, 0, 0, false)
				run.Progress = prog.sweepLevels(setup.Sweep.SweepOptions)
				run.Runs = prog.liveRun
				run.SeedProgress = func(sc capacity.SeedCeiling) {
					fmt.Fprintf(cmd.ErrOrStderr(), "seed %d: ceiling %d users (first failing %d; %d levels)\n", sc.Seed, sc.Ceiling, sc.FirstFailing, sc.Runs)
				}
			}
			if out != "" {
				run.RecordsDir = filepath.Join(out, "records")
			}
			res, err := capacity.SweepOne(cmd.Context(), setup.Setup, params, run)
			if errors.Is(err, capacity.ErrBadParams) {
				return usageErrorf("--params: %v", err)
			}
			if err != nil {
				return err
			}
			if asJSON {
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
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "capacity ceiling: %d users (resolution %d)\n", res.Ceiling, res.Resolution)
			if res.Unconfirmed {
				fmt.Fprintf(w, "unconfirmed: that level met the SLA on too few samples to be judged; the largest judged count is %d (lengthen sweep.duration)\n", res.JudgedCeiling)
			}
			if iv := res.Interval; iv != nil {
				fmt.Fprintf(w, "interval: [%d, %d] users: %.0f %% of sweeps with another workload seed land there (%d seeds, mean %.1f, sd %.1f)\n", iv.Lo, iv.Hi, 100*iv.Confidence, len(iv.Seeds), iv.MeanUsers, iv.StdDevUsers)
			} else if res.NoInterval != "" {
				fmt.Fprintf(w, "interval: none (%s)\n", res.NoInterval)
			}
			if m := res.Margin; m != nil {
				fmt.Fprintf(w, "binding clause: %s %s: %s at the ceiling, %.0f %% below its limit %s\n", m.Scope, m.Clause, fmtClause(m.Clause, m.AtCeiling), 100*m.Headroom, fmtClause(m.Clause, m.Limit))
			}
			fmt.Fprintf(w, "source: %s\n", provenanceLine(res.Provenance()))
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
			if cfg.Sweep.Repeats > 1 {
				fmt.Fprintf(w, "repeats: %d per level, largest throughput spread %.1f%%\n", cfg.Sweep.Repeats, 100*res.Spread)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "plan configuration; the reference case when empty")
	f.StringVar(&paramsFlag, "params", "", "engine flags over engine.params, e.g. max-num-batched-tokens=2048,enable-prefix-caching=false")
	f.IntVar(&trial, "trial", -1, "use the parameters of this trial number of the study (search.storage, relative to --out); unset: engine.params")
	f.StringVar(&usersFlag, "users", "", "coarse grid of user counts, e.g. 50,100,200,400")
	f.IntVar(&repeats, "repeats", 1, "runs per user count, each with its own workload seed")
	f.IntVar(&seeds, "seeds", 5, "workload seeds the ceiling's interval is measured with (sweep.seeds); 1: no interval")
	f.StringVarP(&out, "out", "o", "spoc-out", "folder of the study (for --trial) and of the sweep's records")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.BoolVar(&quiet, "quiet", false, "no per-level progress")
	return cmd
}

// fmtClause prints a clause's value: seconds for a latency, a percentage
// for the error rate.
func fmtClause(clause string, v float64) string {
	if clause == "error_rate" {
		return fmt.Sprintf("%.2f %%", 100*v)
	}
	return fmt.Sprintf("%.2fs", v)
}

func parseUsers(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive user count", part)
		}
		out = append(out, n)
	}
	return out, nil
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
