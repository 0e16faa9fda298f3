package cli

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/trace"
	"github.com/spoc-project/spoc/trace/nsys"
	"github.com/spoc-project/spoc/trace/roofline"
)

func init() { register(newTraceCmd) }

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Nsight Systems exports → where the GPU time goes",
		Long: "trace analyses kernel traces: which kernel categories (attention, MoE GEMM, dense GEMM,\n" +
			"communication, …) the GPUs spend their time in, idle time, rank imbalance and unknown kernels.",
	}
	cmd.AddCommand(newTraceAnalyzeCmd(), newTraceRecipeCmd())
	return cmd
}

func newTraceAnalyzeCmd() *cobra.Command {
	var (
		window, nvtx, rulesFile string
		asJSON                  bool
		top                     int
		pred                    predictFlags
	)
	cmd := &cobra.Command{
		Use:   "analyze FILE",
		Short: "Break an nsys SQLite export (or an nsys stats kernel summary CSV) down by kernel category",
		Long: "analyze reads FILE, an `nsys export --type sqlite` database or the CSV of\n" +
			"`nsys stats --report cuda_gpu_kern_sum --format csv`, and prints each kernel category's\n" +
			"time and share overall and per GPU, idle fractions, top kernels, rank imbalance and\n" +
			"the kernels no rule matched. See docs/trace.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if top < 0 {
				return usageErrorf("--top must be positive, got %d", top)
			}
			opt, err := traceSpan(window, nvtx)
			if err != nil {
				return err
			}
			rules, err := traceRules(rulesFile)
			if err != nil {
				return err
			}
			return analyzeTrace(cmd, path, opt, rules, top, &pred, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&window, "window", "", "analyse only start:end of the trace (e.g. 30s:50s; plain numbers are ns)")
	f.StringVar(&nvtx, "nvtx", "", "analyse the span of the NVTX ranges with this text")
	f.StringVar(&rulesFile, "rules", "", "YAML categorisation rules (see docs/trace.md); default: built-in")
	f.IntVar(&top, "top", trace.DefaultTopKernels, "kernels listed per category")
	f.BoolVar(&asJSON, "json", false, "print the breakdown as JSON")
	f.BoolVar(&pred.enabled, "predict", false, "compare with perfmodel's predicted split under W4A16 and FP4")
	f.StringVar(&pred.model, "model", roofline.DefaultModel, "model for --predict (perfmodel catalog)")
	f.StringVar(&pred.gpu, "gpu", "", "GPU for --predict (default: from the trace, else h100)")
	f.IntVar(&pred.tp, "tp", 0, "tensor-parallel size for --predict (default: GPUs in the trace)")
	f.IntVar(&pred.mix.DecodeSeqs, "decode-seqs", 256, "--predict batch mix: decoding sequences per step")
	f.IntVar(&pred.mix.DecodeContext, "decode-context", 20000, "--predict batch mix: cached tokens per decoding sequence")
	f.IntVar(&pred.mix.PrefillTokens, "prefill-tokens", 2048, "--predict batch mix: prefill chunk tokens per step (0: none)")
	f.IntVar(&pred.mix.PrefillContext, "prefill-context", 0, "--predict batch mix: cached tokens before the prefill chunk")
	f.BoolVar(&pred.cudaGraphs, "cuda-graphs", true, "--predict: the engine replays CUDA graphs for small steps")
	return cmd
}

// analyzeOutput is the JSON of analyze: the breakdown's fields, plus the
// roofline comparisons with --predict.
type analyzeOutput struct {
	*trace.Breakdown
	Roofline []roofline.Comparison `json:"roofline,omitempty"`
}

// predictFlags hold --predict's options.
type predictFlags struct {
	enabled    bool
	model, gpu string
	tp         int
	mix        roofline.BatchMix
	cudaGraphs bool
}

func (p *predictFlags) compare(b *trace.Breakdown) ([]roofline.Comparison, error) {
	model, err := perfmodel.LookupModel(p.model)
	if err != nil {
		return nil, usageErrorf("--model: %v", err)
	}
	gpuName := p.gpu
	if gpuName == "" {
		gpuName = "h100"
		if len(b.GPUs) > 0 {
			if g, ok := roofline.GPUFromTraceName(b.GPUs[0].Name); ok {
				gpuName = g
			}
		}
	}
	gpu, err := perfmodel.LookupGPU(gpuName)
	if err != nil {
		return nil, usageErrorf("--gpu: %v", err)
	}
	tp := p.tp
	if tp == 0 {
		tp = max(1, len(b.GPUs))
	}
	if err := p.mix.Validate(); err != nil {
		return nil, usageError(err)
	}
	preds, err := roofline.Predict(model, gpu, perfmodel.SystemOptions{TensorParallel: tp, CUDAGraphs: p.cudaGraphs}, p.mix, nil)
	if err != nil {
		return nil, usageError(err)
	}
	return roofline.Compare(b, preds)
}

// readTrace reads the capture with nsys.ReadFile (the reader plan's
// trace.file uses too); a window asked of a stats summary is bad usage.
func readTrace(cmd *cobra.Command, path string, opt nsys.Options) (*trace.Profile, error) {
	p, err := nsys.ReadFile(cmd.Context(), path, opt)
	if errors.Is(err, nsys.ErrNoTimeline) {
		return nil, usageErrorf("%s is an nsys stats summary: it has no timeline, so --window and --nvtx do not apply", path)
	}
	return p, err
}

func newTraceRecipeCmd() *cobra.Command {
	var opt trace.RecipeOptions
	cmd := &cobra.Command{
		Use:   "recipe",
		Short: "Print how to capture a steady-state Nsight Systems trace of containerised vLLM under load",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opt.TensorParallel < 1 {
				return usageErrorf("--tp must be at least 1, got %d", opt.TensorParallel)
			}
			if opt.Duration < time.Second || opt.Delay < time.Second {
				return usageErrorf("--duration and --delay must be at least 1s")
			}
			return trace.WriteRecipe(cmd.OutOrStdout(), opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Image, "image", trace.DefaultRecipeImage, "vLLM container image")
	f.StringVar(&opt.Model, "model", trace.DefaultRecipeModel, "served model")
	f.IntVar(&opt.TensorParallel, "tp", 4, "tensor-parallel size")
	f.DurationVar(&opt.Duration, "duration", 20*time.Second, "length of the steady-state capture")
	f.DurationVar(&opt.Delay, "delay", 10*time.Minute, "delay before recording in the one-shot variant")
	return cmd
}

// traceSpan is the part of the trace to analyse: --window or --nvtx.
func traceSpan(window, nvtx string) (nsys.Options, error) {
	var opt nsys.Options
	if window != "" {
		w, err := trace.ParseWindow(window)
		if err != nil {
			return opt, usageErrorf("--window: %v", err)
		}
		opt.Window = w
	}
	if nvtx != "" {
		if window != "" {
			return opt, usageErrorf("--window and --nvtx exclude each other")
		}
		opt.NVTX = nvtx
	}
	return opt, nil
}

// traceRules reads --rules, or the built-in categorisation rules.
func traceRules(file string) (*trace.RuleSet, error) {
	if file == "" {
		return trace.DefaultRules(), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, usageErrorf("--rules: %v", err)
	}
	defer f.Close()
	rules, err := trace.ParseRules(f, file)
	if err != nil {
		return nil, usageError(err)
	}
	return rules, nil
}

// analyzeTrace breaks the trace at path down by kernel category, compares
// it with the roofline prediction when asked, and prints both.
func analyzeTrace(cmd *cobra.Command, path string, opt nsys.Options, rules *trace.RuleSet, top int, pred *predictFlags, asJSON bool) error {
	p, err := readTrace(cmd, path, opt)
	if err != nil {
		return err
	}
	b, err := trace.Analyze(p, rules, trace.Options{TopKernels: top})
	if err != nil {
		return err
	}
	var cmps []roofline.Comparison
	if pred.enabled {
		if cmps, err = pred.compare(b); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), analyzeOutput{Breakdown: b, Roofline: cmps})
	}
	if err := trace.WriteText(cmd.OutOrStdout(), b, trace.TextOptions{}); err != nil {
		return err
	}
	return roofline.WriteText(cmd.OutOrStdout(), b, pred.mix, cmps)
}
