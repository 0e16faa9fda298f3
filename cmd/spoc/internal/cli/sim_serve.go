package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/sim/serve"
	"github.com/spoc-project/spoc/vllm"
)

// simServeKeys are the flags of spoc sim serve, besides the engine's, that
// set configuration keys; vllm serve's own command line is serve's
// (serve.CommandLine).
var simServeKeys = keyFlags{
	{flag: "served-model-name", key: "engine.served_model_name"},
	{flag: "time-scale", key: "engine.sim.time_scale"},
	{flag: "error-rate", key: "engine.sim.error_rate"},
	{flag: "seed", key: "workload.seed"},
	{flag: "tokenizer", key: "workload.tokenizer"},
	{flag: "throttle", key: "engine.sim.throttle", value: throttleYAML, each: true},
}

func newSimServeCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "serve [--port P] [--host H] [--model M --gpu G --gpus N --tensor-parallel-size T] [--time-scale F] [vLLM flags] [--vllm-faithful [MODEL]]",
		Short: "Serve the simulated deployment over an OpenAI-compatible HTTP API with vLLM and DCGM metrics",
		Long: "Serves " + vllm.PathChatCompletions + ", " + vllm.PathCompletions + ", " + vllm.PathModels + ", /health, /version, /tokenize,\n" +
			"/reset_prefix_cache, vLLM's Prometheus metrics on /metrics and dcgm-exporter GPU metrics on\n" +
			"/dcgm/metrics, driven by the simulated engine in\n" +
			"wall-clock time scaled by --time-scale. Engine flags take vLLM's names (--max-num-batched-tokens ...).\n" +
			"Binds 127.0.0.1 unless --host says otherwise; stops cleanly on SIGTERM or Ctrl-C.\n\n" +
			"--vllm-faithful makes the server stand in for a real vLLM process (docs/simulator.md): gpt-oss\n" +
			"streams reasoning before content, chunks carry --tokens-per-chunk tokens, cached_tokens needs\n" +
			"--enable-prompt-tokens-details, /reset_prefix_cache needs VLLM_SERVER_DEV_MODE=1, the model may be\n" +
			"given as vllm serve's positional MODEL, the GPUs are --tensor-parallel-size × --data-parallel-size\n" +
			"unless --gpus says otherwise (--data-parallel-size defaults to 1 as in vLLM; --tensor-parallel-size\n" +
			"to the configuration's, 4 without --config, where vllm serve's is 1: pass it to mirror a command\n" +
			"line that leaves it out), and these vLLM flags are accepted and ignored with a log line:\n" +
			wrapWords(serve.IgnoredFlagNames(), 100) + ".\n\n" +
			"--sglang-faithful makes it stand in for an SGLang server instead (docs/simulator.md): SGLang's flag\n" +
			"names (--model-path, --tp-size, --dp-size, --max-running-requests, --chunked-prefill-size,\n" +
			"--mem-fraction-static, --disable-radix-cache, --context-length map onto the simulated engine; the\n" +
			"rest of spoc's SGLang catalogue is accepted and ignored with a log line), sglang: metrics on /metrics\n" +
			"only with --enable-metrics, /flush_cache, cached_tokens only with --enable-cache-report.",
		Args: cobra.ArbitraryArgs, // vllm serve's positional MODEL: serve.CommandLine checks them
	}
	fl := cmd.Flags()
	keys := append(addSimEngineFlags(fl), simServeKeys...)
	fl.StringVarP(&file, "config", "c", "", "configuration file (default: the reference case)")
	fl.String("served-model-name", "", "model name in the API and metrics (default: --model)")
	fl.Float64("time-scale", 0, "simulated seconds per wall-clock second (default engine.sim.time_scale)")
	fl.Float64("error-rate", 0, "fraction of requests answered with HTTP 500 (default engine.sim.error_rate)")
	fl.Uint64("seed", 0, "seed of injected faults and sampled reply lengths (default workload.seed)")
	fl.StringArray("throttle", nil, "throttle a GPU: GPU:FACTOR[@START-END] in simulated time (repeatable; adds to engine.sim.throttle)")
	fl.String("tokenizer", "", "tokenizer for prompt tokens (default workload.tokenizer)")
	cl := serve.NewCommandLine(fl)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := cl.Parse(args)
		if err != nil {
			return usageError(err)
		}
		settings, err := keys.settings(cmd.Flags())
		if err != nil {
			return err
		}
		if opts.Model != "" {
			settings = append(settings, config.Setting{Key: "engine.model", Value: strconv.Quote(opts.Model), Source: "MODEL"})
		}
		sc, err := simServeConfig(file, settings, opts)
		if err != nil {
			return usageError(err)
		}
		if opts.Faithful || opts.SGLang {
			// vLLM logs every request; so does its stand-in
			sc.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
		return serveSim(cmd.Context(), cmd.ErrOrStderr(), sc, opts)
	}
	return cmd
}

// simServeConfig resolves the served deployment: the configuration file
// with the command line's settings over it, completed by vllm serve's
// rules and resolved by opts.Deployment.
func simServeConfig(file string, settings []config.Setting, opts serve.Options) (serve.Config, error) {
	var cfg *config.Config
	var err error
	if opts.Faithful || opts.SGLang {
		// vLLM (or SGLang) knows no workload: the configuration is checked as loaded
		// and the command line by the deployment (NewDeployment,
		// serve.New), so that a --max-model-len below the configured
		// workload's contexts starts as vLLM would.
		if cfg, err = config.LoadFile(file); err == nil {
			err = cfg.Apply(settings...)
		}
	} else {
		cfg, err = config.LoadFile(file, settings...)
	}
	if err != nil {
		return serve.Config{}, err
	}
	dep, err := opts.Deployment(cfg.Engine.SimDeployment())
	if err != nil {
		return serve.Config{}, err
	}
	return opts.Server(dep, serve.Config{TimeScale: cfg.Engine.Sim.TimeScale, ErrorRate: cfg.Engine.Sim.ErrorRate,
		Seed: cfg.Workload.Seed, Tokenizer: cfg.Workload.Tokenizer, Version: Version}), nil
}

// serveSim serves sc at opts.Addr until ctx ends, saying on stderr what it
// serves and, at the end, the engine's own count of its time.
func serveSim(ctx context.Context, stderr io.Writer, sc serve.Config, opts serve.Options) error {
	srv, err := serve.New(sc)
	if err != nil {
		return usageError(err)
	}
	for _, n := range opts.Ignored {
		fmt.Fprintf(stderr, "spoc sim: ignoring vLLM flag --%s: not modelled\n", n)
	}
	for _, n := range opts.IgnoredSGLang {
		fmt.Fprintf(stderr, "spoc sim: ignoring SGLang flag --%s: not modelled\n", n)
	}
	if opts.Faithful && sc.DevMode {
		fmt.Fprintf(stderr, "spoc sim: %s is set: serving development routes (%s)\n", vllm.EnvServerDevMode, vllm.PathResetPrefixCache)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("sim serve: %w", err)
	}
	mode := ""
	switch {
	case opts.Faithful:
		mode = ", vllm-faithful"
	case opts.SGLang:
		mode = ", sglang-faithful"
	}
	dep := sc.Deployment
	fmt.Fprintf(stderr, "spoc sim: serving %s (%s on %d× %s, TP %d, time scale %g%s) at http://%s\n",
		srv.Model(), dep.Model.Name, dep.GPUs, dep.GPU.Name, dep.TensorParallelSize, sc.TimeScale, mode, ln.Addr())
	err = srv.Serve(ctx, ln)
	// the engine's own count of its time, to check a planner's
	// engine-seconds against (docs/fidelity.md)
	fmt.Fprintf(stderr, "spoc sim: engine usage: %s\n", srv.Usage())
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "spoc sim: stopped")
	return nil
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
