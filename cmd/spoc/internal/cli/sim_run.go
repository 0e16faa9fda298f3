package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/internal/words"
	"github.com/spoc-project/spoc/result"
)

// simRunKeys are the flags of spoc sim run, besides the engine's, that set
// configuration keys.
var simRunKeys = keyFlags{
	{flag: "users", key: "run.users"},
	{flag: "duration", key: "run.duration"},
	{flag: "warmup", key: "run.warmup"},
	{flag: "ramp", key: "run.ramp"},
	{flag: "throttle", key: "engine.sim.throttle", value: throttleYAML, each: true},
}

type simRunFlags struct {
	config, out, series string
	asJSON, check       bool
}

func newSimRunCmd() *cobra.Command {
	var f simRunFlags
	cmd := &cobra.Command{
		Use:   "run [-c FILE] [--users N] [--duration D]",
		Short: "Run the workload against the simulated deployment in virtual time and print the summary",
		Long: "Runs closed-loop users replaying the workload's session scripts against the simulated engine in\n" +
			"virtual time (minutes of load in about a second) and prints the same summary and SLA verdict as\n" +
			"spoc run. -o writes the per-request records as JSONL; --series the engine and GPU time series.",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	engineKeys := addSimEngineFlags(fl)
	fl.StringVarP(&f.config, "config", "c", "", "configuration file (default: the reference case)")
	fl.Int("users", 0, "concurrent users (default run.users)")
	fl.Duration("duration", 0, "measured window in simulated time (default run.duration)")
	fl.Duration("warmup", 0, "warm-up before the window (default run.warmup)")
	fl.Duration("ramp", 0, "user start stagger (default run.ramp)")
	fl.StringVarP(&f.out, "out", "o", "", "write records as JSONL to this file")
	// --output was this flag's first name; spoc run and the other verbs say --out.
	fl.StringVar(&f.out, "output", "", "write records as JSONL to this file")
	_ = fl.MarkDeprecated("output", "use --out")
	fl.StringVar(&f.series, "series", "", "write the engine and GPU time series as JSON to this file")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary and simulator statistics as JSON")
	fl.BoolVar(&f.check, "check", false, "exit 3 when the SLA is not met")
	fl.StringArray("throttle", nil, "throttle a GPU: GPU:FACTOR[@START-END] in simulated time (repeatable; adds to engine.sim.throttle)")
	keys := append(engineKeys, simRunKeys...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		// sim run is the run use case on the simulator's launcher, in
		// virtual time, whatever engine the configuration names.
		cfg, err := loadConfigWith(f.config, cmd.Flags(), keys, config.Setting{Key: "engine.kind", Value: config.EngineSim, Source: "spoc sim run"})
		if err != nil {
			return err
		}
		setup, err := cfg.Setup(config.SetupOptions{})
		if err != nil {
			return usageError(err)
		}
		return runSim(cmd.Context(), cmd.OutOrStdout(), setup.Setup, &f)
	}
	return cmd
}

func runSim(ctx context.Context, stdout io.Writer, s capacity.Setup, f *simRunFlags) error {
	res, err := capacity.Run(ctx, s, capacity.RunOptions{Records: f.out})
	if err != nil {
		var bad *config.Errors
		if errors.As(err, &bad) || errors.Is(err, capacity.ErrBadSetup) || capacity.IsInfeasible(err) {
			return usageError(fmt.Errorf("sim run: %w", err))
		}
		return fmt.Errorf("sim run: %w", err)
	}
	st := res.Sim
	if f.series != "" {
		if err := writeAtomic(f.series, func(w io.Writer) error { return writeJSON(w, st.Series) }); err != nil {
			return fmt.Errorf("sim run: %w", err)
		}
	}
	if f.asJSON {
		out := map[string]any{"summary": res.Summary, "sim": st}
		if res.Sessions != nil {
			out["sessions"] = res.Sessions
		}
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else if err := writeSimRun(stdout, s, res.Evaluation); err != nil {
		return err
	}
	if f.check && !res.Pass {
		return &ExitError{Code: ExitSLANotMet}
	}
	return nil
}

// writeSimRun prints a simulated run's summary and what the simulator saw.
func writeSimRun(w io.Writer, s capacity.Setup, ev *capacity.Evaluation) error {
	if err := result.WriteText(w, ev.Summary); err != nil {
		return err
	}
	if ev.Sessions != nil {
		fmt.Fprintln(w, sessionsLine(ev.Sessions))
	}
	st, d := ev.Sim, s.Deployment
	fmt.Fprintf(w, "\nsimulator: %s on %d× %s (TP %d, %s), %d KV tokens per replica\n",
		d.Model, max(d.GPUs, 1), d.GPU, d.TensorParallelSize, words.Plural(st.Replicas, "replica"), st.KVTokens)
	fmt.Fprintf(w, "  steps %d, preemptions %d, prefix-cache hit rate %.1f%%, KV usage mean %.1f%% peak %.1f%%, SM active %.1f%%\n",
		st.Engine.Steps, st.Preemptions, 100*st.PrefixHitRate, 100*st.MeanKVUsage, 100*st.PeakKVUsage, 100*st.MeanSMActive)
	_, err := fmt.Fprintf(w, "  GPU time: attention %.1f%%, MoE %.1f%%, dense GEMM %.1f%%, communication %.1f%%, overhead %.1f%%, other %.1f%%\n",
		100*st.AttentionShare, 100*st.MoEShare, 100*st.DenseShare, 100*st.CommShare, 100*st.OverheadShare, 100*st.OtherShare)
	return err
}
