package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/perfmodel/calibrate"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/sim/serve"
	"github.com/spoc-project/spoc/vllm"
)

func init() { register(newSimCmd) }

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "The built-in vLLM-like simulator: in virtual time, or as an HTTP server",
	}
	cmd.AddCommand(newSimRunCmd(), newSimServeCmd(), newSimCalibrateCmd(), newSimValidateCmd())
	return cmd
}

// simEngineFlags are the deployment flags shared by sim run and sim serve.
type simEngineFlags struct {
	model, gpu, weightFormat string
	gpus, tp, maxModelLen    int
	ints                     map[string]*int
	floats                   map[string]*float64
	bools                    map[string]*bool
	strings                  map[string]*string
}

func addSimEngineFlags(fs *pflag.FlagSet) *simEngineFlags {
	o := &simEngineFlags{ints: map[string]*int{}, floats: map[string]*float64{}, bools: map[string]*bool{}, strings: map[string]*string{}}
	fs.StringVar(&o.model, "model", "", "model: catalog name or Hugging Face config.json (default from config)")
	fs.StringVar(&o.gpu, "gpu", "", "GPU type (default from config)")
	fs.IntVar(&o.gpus, "gpus", 0, "number of GPUs (default from config)")
	fs.IntVar(&o.tp, "tensor-parallel-size", 0, "tensor-parallel size (default from config)")
	fs.StringVar(&o.weightFormat, "weight-format", "", "expert weight format: w4a16, fp4, bf16, fp8")
	fs.IntVar(&o.maxModelLen, "max-model-len", 0, "context limit in tokens (default from config)")
	for _, n := range []string{"max-num-batched-tokens", "max-num-seqs", "long-prefill-token-threshold", "block-size"} {
		o.ints[n] = fs.Int(n, 0, "vLLM --"+n)
	}
	o.floats["gpu-memory-utilization"] = fs.Float64("gpu-memory-utilization", 0, "vLLM --gpu-memory-utilization")
	for _, n := range []string{"enable-prefix-caching", "enable-chunked-prefill", "async-scheduling", "enforce-eager"} {
		o.bools[n] = fs.Bool(n, false, "vLLM --"+n)
		o.bools["no-"+n] = fs.Bool("no-"+n, false, "vLLM --no-"+n)
	}
	o.strings["kv-cache-dtype"] = fs.String("kv-cache-dtype", "", "vLLM --kv-cache-dtype")
	return o
}

// apply writes the flags that were set over the engine section.
func (o *simEngineFlags) apply(fs *pflag.FlagSet, e *config.Engine) {
	set := func(n string) bool { return fs.Changed(n) }
	if set("model") {
		e.Model = o.model
	}
	if set("gpu") {
		e.GPU = o.gpu
	}
	if set("gpus") {
		e.GPUs = o.gpus
		if !set("tensor-parallel-size") && e.TensorParallelSize > o.gpus {
			e.TensorParallelSize = o.gpus
		}
	}
	if set("tensor-parallel-size") {
		e.TensorParallelSize = o.tp
	}
	if set("weight-format") {
		e.WeightFormat = o.weightFormat
	}
	if set("max-model-len") {
		e.MaxModelLen = o.maxModelLen
	}
	// Command-line flags replace configured parameters of the same flag
	// whatever their spelling (max_num_seqs in YAML, --max-num-seqs here).
	params := map[string]any{}
	for n, p := range o.ints {
		if set(n) {
			params[n] = *p
		}
	}
	for n, p := range o.floats {
		if set(n) {
			params[n] = *p
		}
	}
	for n, p := range o.bools {
		if set(n) {
			params[n] = *p
		}
	}
	for n, p := range o.strings {
		if set(n) {
			params[n] = *p
		}
	}
	e.Params = vllm.Merge(e.Params, params)
}

func newSimRunCmd() *cobra.Command {
	var (
		file, out, seriesOut string
		users                int
		duration, warmup     time.Duration
		ramp                 time.Duration
		asJSON, check        bool
		throttles            []string
	)
	cmd := &cobra.Command{
		Use:   "run [-c FILE] [--users N] [--duration D]",
		Short: "Run the workload against the simulated deployment in virtual time and print the summary",
		Long: "Runs closed-loop users replaying the workload's session scripts against the simulated engine in\n" +
			"virtual time (minutes of load in about a second) and prints the same summary and SLA verdict as\n" +
			"spoc run. -o writes the per-request records as JSONL; --series the engine and GPU time series.",
		Args: cobra.NoArgs,
	}
	ov := addSimEngineFlags(cmd.Flags())
	cmd.Flags().StringVarP(&file, "config", "c", "", "configuration file (default: the reference case)")
	cmd.Flags().IntVar(&users, "users", 0, "concurrent users (default run.users)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "measured window in simulated time (default run.duration)")
	cmd.Flags().DurationVar(&warmup, "warmup", 0, "warm-up before the window (default run.warmup)")
	cmd.Flags().DurationVar(&ramp, "ramp", 0, "user start stagger (default run.ramp)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write records as JSONL to this file")
	// --output was this flag's first name; spoc run and the other verbs say --out.
	cmd.Flags().StringVar(&out, "output", "", "write records as JSONL to this file")
	_ = cmd.Flags().MarkDeprecated("output", "use --out")
	cmd.Flags().StringVar(&seriesOut, "series", "", "write the engine and GPU time series as JSON to this file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary and simulator statistics as JSON")
	cmd.Flags().BoolVar(&check, "check", false, "exit 3 when the SLA is not met")
	cmd.Flags().StringArrayVar(&throttles, "throttle", nil, "throttle a GPU: GPU:FACTOR[@START-END] in simulated time (repeatable; adds to engine.sim.throttle)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig(file)
		if err != nil {
			return err
		}
		ov.apply(cmd.Flags(), &cfg.Engine)
		if users > 0 {
			cfg.Run.Users = users
		} else if cmd.Flags().Changed("users") {
			return usageErrorf("--users must be at least 1, got %d", users)
		}
		if duration > 0 {
			cfg.Run.Duration = config.Duration(duration)
		} else if cmd.Flags().Changed("duration") {
			return usageErrorf("--duration must be positive, got %s", duration)
		}
		if warmup < 0 || ramp < 0 {
			return usageErrorf("--warmup and --ramp must not be negative")
		}
		if cmd.Flags().Changed("warmup") {
			cfg.Run.Warmup = config.Duration(warmup)
		}
		if cmd.Flags().Changed("ramp") {
			cfg.Run.Ramp = config.Duration(ramp)
		}
		for _, t := range throttles {
			th, err := sim.ParseThrottle(t)
			if err != nil {
				return usageErrorf("--throttle: %v", err)
			}
			cfg.Engine.Sim.Throttle = append(cfg.Engine.Sim.Throttle, config.Throttle{GPU: th.GPU, ClockFactor: th.ClockFactor,
				Start: config.Duration(th.Start * float64(time.Second)), End: config.Duration(th.End * float64(time.Second))})
		}
		// sim run is the run use case on the simulator's launcher, in
		// virtual time, whatever engine the configuration names.
		cfg.Engine.Kind = config.EngineSim
		setup, err := cfg.Setup(config.SetupOptions{})
		if err != nil {
			return usageError(err)
		}
		return runSim(cmd.Context(), cmd.OutOrStdout(), setup.Setup, out, seriesOut, asJSON, check)
	}
	return cmd
}

func runSim(ctx context.Context, stdout io.Writer, s capacity.Setup, out, seriesOut string, asJSON, check bool) error {
	ev, err := capacity.NewEvaluator(s, nil)
	if err != nil {
		return usageError(err)
	}
	var res *capacity.Evaluation
	run := func(o capacity.Outputs) (err error) {
		res, err = ev.Evaluate(ctx, nil, s.Windows.Run, o)
		return err
	}
	if out == "" {
		err = run(capacity.Outputs{})
	} else {
		// records go through the one atomic writer: no half file on failure
		err = writeAtomic(out, func(w io.Writer) error { return run(capacity.Outputs{Records: w}) })
	}
	if err != nil {
		var bad *config.Errors
		if errors.As(err, &bad) || capacity.IsInfeasible(err) {
			return usageError(fmt.Errorf("sim run: %w", err))
		}
		return fmt.Errorf("sim run: %w", err)
	}
	st := res.Sim
	if seriesOut != "" {
		if err := writeAtomic(seriesOut, func(w io.Writer) error { return writeJSON(w, st.Series) }); err != nil {
			return fmt.Errorf("sim run: %w", err)
		}
	}
	if asJSON {
		if err := writeJSON(stdout, map[string]any{"summary": res.Summary, "sim": st}); err != nil {
			return err
		}
	} else {
		if err := result.WriteText(stdout, res.Summary); err != nil {
			return err
		}
		d := s.Deployment
		fmt.Fprintf(stdout, "\nsimulator: %s on %d× %s (TP %d, %d replica(s)), %d KV tokens per replica\n",
			d.Model, max(d.GPUs, 1), d.GPU, d.TensorParallelSize, st.Replicas, st.KVTokens)
		fmt.Fprintf(stdout, "  steps %d, preemptions %d, prefix-cache hit rate %.1f%%, KV usage mean %.1f%% peak %.1f%%, SM active %.1f%%\n",
			st.Engine.Steps, st.Preemptions, 100*st.PrefixHitRate, 100*st.MeanKVUsage, 100*st.PeakKVUsage, 100*st.MeanSMActive)
		fmt.Fprintf(stdout, "  GPU time: attention %.1f%%, MoE %.1f%%, dense GEMM %.1f%%, communication %.1f%%, overhead %.1f%%, other %.1f%%\n",
			100*st.AttentionShare, 100*st.MoEShare, 100*st.DenseShare, 100*st.CommShare, 100*st.OverheadShare, 100*st.OtherShare)
	}
	if check && !res.Pass {
		return &ExitError{Code: ExitSLANotMet}
	}
	return nil
}

func newSimServeCmd() *cobra.Command {
	var (
		file, host, tok, served string
		port                    int
		timeScale, errorRate    float64
		seed                    uint64
		throttles, stalls       []string
		faithful, promptDetails bool
		tokensPerChunk, dp      int
		reasoningField          string
	)
	ignoredNames := make([]string, 0, len(serve.IgnoredFlags))
	for _, fl := range serve.IgnoredFlags {
		ignoredNames = append(ignoredNames, "--"+fl.Name)
	}
	cmd := &cobra.Command{
		Use:   "serve [--port P] [--host H] [--model M --gpu G --gpus N --tensor-parallel-size T] [--time-scale F] [vLLM flags] [--vllm-faithful [MODEL]]",
		Short: "Serve the simulated deployment over an OpenAI-compatible HTTP API with vLLM and DCGM metrics",
		Long: "Serves /v1/chat/completions, /v1/completions, /v1/models, /health, /version, /tokenize,\n" +
			"/reset_prefix_cache, vLLM's Prometheus metrics on /metrics and dcgm-exporter GPU metrics on\n" +
			"/dcgm/metrics, driven by the simulated engine in\n" +
			"wall-clock time scaled by --time-scale. Engine flags take vLLM's names (--max-num-batched-tokens ...).\n" +
			"Binds 127.0.0.1 unless --host says otherwise; stops cleanly on SIGTERM or Ctrl-C.\n\n" +
			"--vllm-faithful makes the server stand in for a real vLLM process (docs/simulator.md): gpt-oss\n" +
			"streams reasoning before content, chunks carry --tokens-per-chunk tokens, cached_tokens needs\n" +
			"--enable-prompt-tokens-details, /reset_prefix_cache needs VLLM_SERVER_DEV_MODE=1, the model may be\n" +
			"given as vllm serve's positional MODEL, the GPUs are --tensor-parallel-size × --data-parallel-size\n" +
			"unless --gpus says otherwise, and these vLLM flags are accepted and ignored with a log line:\n" +
			wrapWords(ignoredNames, 100) + ".",
		Args: func(cmd *cobra.Command, args []string) error {
			if faithful {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			return cobra.NoArgs(cmd, args)
		},
	}
	ov := addSimEngineFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "configuration file (default: the reference case)")
	f.IntVar(&port, "port", 8000, "TCP port (0 picks a free one)")
	f.StringVar(&host, "host", "127.0.0.1", "address to bind")
	f.StringVar(&served, "served-model-name", "", "model name in the API and metrics (default: --model)")
	f.Float64Var(&timeScale, "time-scale", 0, "simulated seconds per wall-clock second (default engine.sim.time_scale)")
	f.Float64Var(&errorRate, "error-rate", 0, "fraction of requests answered with HTTP 500 (default engine.sim.error_rate)")
	f.Uint64Var(&seed, "seed", 0, "seed of injected faults and sampled reply lengths (default workload.seed)")
	f.StringArrayVar(&throttles, "throttle", nil, "throttle a GPU: GPU:FACTOR[@START-END] in simulated time (repeatable; adds to engine.sim.throttle)")
	f.StringArrayVar(&stalls, "stall", nil, "freeze the engine: START+DURATION in simulated time (repeatable)")
	f.StringVar(&tok, "tokenizer", "", "tokenizer for prompt tokens (default workload.tokenizer)")
	f.BoolVar(&faithful, "vllm-faithful", false, "behave like a real vLLM server where spoc depends on it (see the description above)")
	f.IntVar(&tokensPerChunk, "tokens-per-chunk", 0, "tokens per streamed chunk after the first (default 1, 2 with --vllm-faithful)")
	f.StringVar(&reasoningField, "reasoning-field", vllm.FieldReasoning, "with --vllm-faithful, the delta field of gpt-oss reasoning: reasoning, or reasoning_content as vLLM before the rename")
	f.BoolVar(&promptDetails, "enable-prompt-tokens-details", false, "vLLM --enable-prompt-tokens-details: report cached_tokens (always reported without --vllm-faithful)")
	f.Bool("no-enable-prompt-tokens-details", false, "vLLM --no-enable-prompt-tokens-details")
	f.IntVar(&dp, "data-parallel-size", 1, "vLLM --data-parallel-size: GPUs = data-parallel size × tensor-parallel size")
	var ignorable []string // hidden: listed in the description
	for _, fl := range serve.IgnoredFlags {
		names := []string{fl.Name}
		if fl.Boolean {
			names = append(names, "no-"+fl.Name)
		}
		ignorable = append(ignorable, names...)
		for _, n := range names {
			if fl.Boolean {
				f.Bool(n, false, "vLLM --"+n+" (ignored with --vllm-faithful)")
			} else {
				f.String(n, "", "vLLM --"+n+" (ignored with --vllm-faithful)")
			}
			_ = f.MarkHidden(n)
		}
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := loadConfig(file)
		if err != nil {
			return err
		}
		var ignored []string
		for _, n := range ignorable {
			if f.Changed(n) {
				ignored = append(ignored, n)
			}
		}
		if len(ignored) > 0 && !faithful {
			return usageErrorf("unknown flag: --%s", ignored[0])
		}
		if len(args) == 1 {
			if f.Changed("model") && ov.model != args[0] {
				return usageErrorf("model given twice: %q and --model %q", args[0], ov.model)
			}
			_ = f.Set("model", args[0])
		}
		if faithful {
			// vLLM knows no workload: the configuration is checked as
			// loaded and the command line by the deployment (NewDeployment,
			// serve.New), so that a --max-model-len below the configured
			// workload's contexts starts as vLLM would.
			if err := cfg.Validate(); err != nil {
				return usageError(err)
			}
		}
		ov.apply(cmd.Flags(), &cfg.Engine)
		// vLLM runs on tensor-parallel × data-parallel GPUs; the faithful
		// mode takes its GPU count from the command line the same way.
		if f.Changed("data-parallel-size") || (faithful && !f.Changed("gpus")) {
			if dp < 1 {
				return usageErrorf("--data-parallel-size must be at least 1, got %d", dp)
			}
			gpus := dp * cfg.Engine.TensorParallelSize
			if f.Changed("gpus") && cfg.Engine.GPUs != gpus {
				return usageErrorf("--gpus %d is not --data-parallel-size %d × tensor-parallel size %d", cfg.Engine.GPUs, dp, cfg.Engine.TensorParallelSize)
			}
			cfg.Engine.GPUs = gpus
		}
		if f.Changed("served-model-name") {
			cfg.Engine.ServedModelName = served
		}
		if port < 0 || port > 65535 {
			return usageErrorf("--port must be in [0, 65535], got %d", port)
		}
		if !faithful {
			if err := cfg.Validate(); err != nil {
				return usageError(err)
			}
		}
		dep, err := sim.NewDeployment(cfg.Engine.SimDeployment())
		if err != nil {
			return usageError(err)
		}
		sc := serve.Config{Deployment: dep, TimeScale: cfg.Engine.Sim.TimeScale, ErrorRate: cfg.Engine.Sim.ErrorRate,
			Seed: cfg.Workload.Seed, Tokenizer: cfg.Workload.Tokenizer, Version: Version,
			VLLMFaithful: faithful, TokensPerChunk: tokensPerChunk, ReasoningField: reasoningField,
			EnablePromptTokensDetails: promptDetails && !f.Changed("no-enable-prompt-tokens-details"),
			DevMode:                   serve.DevMode(os.Getenv(vllm.EnvServerDevMode))}
		if faithful {
			// vLLM logs every request; so does its stand-in
			sc.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
		if f.Changed("time-scale") {
			sc.TimeScale = timeScale
		}
		if f.Changed("error-rate") {
			sc.ErrorRate = errorRate
		}
		if f.Changed("seed") {
			sc.Seed = seed
		}
		if f.Changed("tokenizer") {
			sc.Tokenizer = tok
		}
		for _, t := range throttles {
			th, err := sim.ParseThrottle(t)
			if err != nil {
				return usageErrorf("--throttle: %v", err)
			}
			sc.Deployment.Throttles = append(sc.Deployment.Throttles, th)
		}
		for _, st := range stalls {
			s, err := serve.ParseStall(st)
			if err != nil {
				return usageErrorf("--stall: %v", err)
			}
			sc.Stalls = append(sc.Stalls, s)
		}
		srv, err := serve.New(sc)
		if err != nil {
			return usageError(err)
		}
		for _, n := range ignored {
			fmt.Fprintf(cmd.ErrOrStderr(), "spoc sim: ignoring vLLM flag --%s: not modelled\n", n)
		}
		if faithful && sc.DevMode {
			fmt.Fprintf(cmd.ErrOrStderr(), "spoc sim: %s is set: serving development routes (%s)\n", vllm.EnvServerDevMode, vllm.PathResetPrefixCache)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			srv.Close()
			return fmt.Errorf("sim serve: %w", err)
		}
		mode := ""
		if faithful {
			mode = ", vllm-faithful"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "spoc sim: serving %s (%s on %d× %s, TP %d, time scale %g%s) at http://%s\n",
			srv.Model(), dep.Model.Name, dep.GPUs, dep.GPU.Name, dep.TensorParallelSize, sc.TimeScale, mode, ln.Addr())
		err = srv.Serve(cmd.Context(), ln)
		// the engine's own count of its time, to check a planner's
		// engine-seconds against (docs/fidelity.md)
		fmt.Fprintf(cmd.ErrOrStderr(), "spoc sim: engine usage: %s\n", srv.Usage())
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "spoc sim: stopped")
		return nil
	}
	return cmd
}

// wrapWords joins words with spaces into lines of at most width bytes.
func wrapWords(words []string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range words {
		if i > 0 && line+1+len(w) > width {
			b.WriteByte('\n')
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// readSimMeasurements reads benchmark measurements for calibrate/validate.
func readSimMeasurements(path string) ([]calibrate.Point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError(err)
	}
	defer f.Close()
	pts, err := calibrate.ReadMeasurements(f, path)
	if err != nil {
		return nil, usageError(err)
	}
	return pts, nil
}

func printSimValidation(w io.Writer, v calibrate.Validation) {
	names := make([]string, 0, len(v.MAPE))
	for n := range v.MAPE {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%d points; mean absolute percentage error:", len(v.Rows))
	for _, n := range names {
		fmt.Fprintf(w, " %s %.1f%%", n, v.MAPE[n])
	}
	fmt.Fprintln(w)
}

func newSimCalibrateCmd() *cobra.Command {
	var (
		model, out string
		params     []string
		maxEval    int
		asJSON     bool
		records    string
		file       string
	)
	cmd := &cobra.Command{
		Use:   "calibrate MEASUREMENTS... [-o calibration.json] | --records DIR [-c FILE] [-o correction.json]",
		Short: "Fit the simulator's cost-model factors to measured benchmarks (CSV or vllm bench serve JSON)",
		Long: "Fits perfmodel factors so that replaying each measured benchmark reproduces its throughput, TPOT and\n" +
			"TTFT, and writes them as a calibration file for engine.sim.calibration. Several files (GPUs, engine\n" +
			"versions) are fitted jointly: one set of achieved fractions for all of them.\n\n" +
			"With --records DIR it fits the per-deployment correction (compute and memory multipliers and a per-step\n" +
			"term) to the live runs of a multi-fidelity plan's output folder (DIR/runs.json), as the plan's\n" +
			"calibrate phase does, and writes it for engine.sim.correction (docs/fidelity.md); -c names the plan's\n" +
			"configuration (workload, SLA, deployment); --params and --max-evaluations do not apply.",
		Args: func(cmd *cobra.Command, args []string) error {
			if records != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if records != "" {
				return simCalibrateRecords(cmd.Context(), cmd.OutOrStdout(), file, records, out, asJSON)
			}
			pts, err := readSimMeasurementFiles(args)
			if err != nil {
				return err
			}
			opts := calibrate.Options{Model: model, Params: params, MaxEvaluations: maxEval}
			if model != "" {
				if _, err := perfmodel.LookupModel(model); err != nil {
					return usageError(err)
				}
			}
			res, err := calibrate.Fit(cmd.Context(), pts, opts)
			if err != nil {
				return fmt.Errorf("sim calibrate: %w", err)
			}
			if out != "" {
				if err := writeAtomic(out, func(w io.Writer) error { return writeJSON(w, res) }); err != nil {
					return fmt.Errorf("sim calibrate: %w", err)
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "fitted %s in %d evaluations\n", strings.Join(res.Params, ", "), res.Evaluations)
			printUnidentified(w, res)
			printSimValidation(w, res.Validation)
			if out != "" {
				fmt.Fprintf(w, "wrote %s (set engine.sim.calibration to use it)\n", out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model of points that do not name one (default "+calibrate.DefaultModel+")")
	cmd.Flags().StringSliceVar(&params, "params", nil, "factors to fit (default: "+strings.Join(calibrate.DefaultParams, ",")+")")
	cmd.Flags().IntVar(&maxEval, "max-evaluations", 0, "bound on objective evaluations (default 400)")
	cmd.Flags().StringVar(&records, "records", "", "fit the per-deployment correction to a multi plan's live runs in this folder instead")
	cmd.Flags().StringVarP(&file, "config", "c", "", "with --records: the plan's configuration (workload, SLA, deployment)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the calibration file here")
	cmd.Flags().StringVar(&out, "output", "", "write the calibration file here")
	_ = cmd.Flags().MarkDeprecated("output", "use --out")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the fit as JSON")
	return cmd
}
