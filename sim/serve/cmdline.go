package serve

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// GPUsFlag is the flag of the deployment's GPU count that a caller defines
// beside a CommandLine's own (spoc sim serve --gpus): given, it is the
// GPU count, and a --data-parallel-size must agree with it.
const GPUsFlag = "gpus"

// CommandLine is a `vllm serve` command line as the simulator's server
// reads it, so that a command line spoc's process launcher renders for
// vLLM starts the simulator instead: the server's own flags (address,
// faults, streaming), vllm serve's positional MODEL and
// --data-parallel-size, and the vLLM flags the vLLM-faithful mode accepts
// and ignores (IgnoredFlags). The engine flags the simulator models
// (--max-num-seqs, --tensor-parallel-size, ...) describe the deployment:
// the caller defines them on the same flag set and resolves them into the
// sim.DeploymentSpec that Options.Deployment completes.
type CommandLine struct {
	fs *pflag.FlagSet

	host, reasoningField    string
	port, tokensPerChunk    int
	dataParallelSize        int
	stalls                  []string
	faithful, promptDetails bool
	ignorable               []string
	// sglang is --sglang-faithful; sglangFlags the SGLang flags it defined.
	sglang      bool
	sglangFlags []string
}

// NewCommandLine defines the command line's flags on fs.
func NewCommandLine(fs *pflag.FlagSet) *CommandLine {
	c := &CommandLine{fs: fs}
	fs.IntVar(&c.port, "port", 8000, "TCP port (0 picks a free one)")
	fs.StringVar(&c.host, "host", "127.0.0.1", "address to bind")
	fs.StringArrayVar(&c.stalls, "stall", nil, "freeze the engine: START+DURATION in simulated time (repeatable)")
	fs.BoolVar(&c.faithful, "vllm-faithful", false, "behave like a real vLLM server where spoc depends on it (see the description above)")
	fs.IntVar(&c.tokensPerChunk, "tokens-per-chunk", 0, "tokens per streamed chunk after the first (default 1, 2 with --vllm-faithful)")
	fs.StringVar(&c.reasoningField, "reasoning-field", vllm.FieldReasoning, "with --vllm-faithful, the delta field of gpt-oss reasoning: reasoning, or reasoning_content as vLLM before the rename")
	fs.BoolVar(&c.promptDetails, "enable-prompt-tokens-details", false, "vLLM --enable-prompt-tokens-details: report cached_tokens (always reported without --vllm-faithful)")
	fs.Bool("no-enable-prompt-tokens-details", false, "vLLM --no-enable-prompt-tokens-details")
	fs.IntVar(&c.dataParallelSize, "data-parallel-size", 1, "vLLM --data-parallel-size: GPUs = data-parallel size × tensor-parallel size")
	// hidden: the command's description lists them (IgnoredFlagNames)
	for _, fl := range IgnoredFlags {
		names := []string{fl.Name}
		if fl.Boolean {
			names = append(names, vllm.NegationPrefix+fl.Name)
		}
		for _, n := range names {
			if fl.Boolean {
				fs.Bool(n, false, "vLLM --"+n+" (ignored with --vllm-faithful)")
			} else {
				fs.String(n, "", "vLLM --"+n+" (ignored with --vllm-faithful)")
			}
			_ = fs.MarkHidden(n)
			c.ignorable = append(c.ignorable, n)
		}
	}
	c.defineSGLangFlags(fs)
	return c
}

// IgnoredFlagNames lists the flags of IgnoredFlags as a command line
// writes them (--trust-remote-code ...).
func IgnoredFlagNames() []string {
	names := make([]string, 0, len(IgnoredFlags))
	for _, fl := range IgnoredFlags {
		names = append(names, "--"+fl.Name)
	}
	return names
}

// Options is what a parsed command line asks of the server.
type Options struct {
	// Addr is the address to listen on (--host, --port).
	Addr string
	// Faithful is --vllm-faithful (Config.VLLMFaithful).
	Faithful bool
	// Model is vllm serve's positional MODEL: the deployment's model,
	// which the caller sets like its own --model; empty when not given.
	Model string
	// Ignored are the vLLM flags given that the simulator does not model,
	// without dashes: the vLLM-faithful mode accepts them with a log line.
	Ignored []string
	Stalls  []Stall
	// TokensPerChunk, ReasoningField, EnablePromptTokensDetails and
	// DevMode (vLLM's VLLM_SERVER_DEV_MODE in the environment) are the
	// Config fields of the same names.
	TokensPerChunk            int
	ReasoningField            string
	EnablePromptTokensDetails bool
	DevMode                   bool
	// SGLang is --sglang-faithful (Config.SGLangFaithful); EnableMetrics
	// its --enable-metrics. IgnoredSGLang are the SGLang flags given that
	// the simulator does not model (accepted with a log line).
	SGLang        bool
	EnableMetrics bool
	IgnoredSGLang []string
	// sglangParams are the SGLang flags given that map onto the
	// simulated engine (sglangToSim); sglangDP is --dp-size.
	sglangParams map[string]any
	sglangDP     int

	// dataParallel is --data-parallel-size when it sets the GPU count
	// (given, or the vLLM-faithful mode without --gpus), else 0.
	dataParallel int
	gpusGiven    bool
}

// Parse reads the parsed flags and the positional arguments as vllm serve
// would: MODEL only in the vLLM-faithful mode, where the vLLM flags the
// simulator ignores are accepted too; without it they are unknown flags.
func (c *CommandLine) Parse(args []string) (Options, error) {
	if c.faithful && c.sglang {
		return Options{}, fmt.Errorf("--vllm-faithful and --%s: one engine at a time", SGLangFaithfulFlag)
	}
	o := Options{Faithful: c.faithful, SGLang: c.sglang, TokensPerChunk: c.tokensPerChunk, ReasoningField: c.reasoningField,
		EnablePromptTokensDetails: c.promptDetails && !c.fs.Changed("no-enable-prompt-tokens-details"),
		DevMode:                   DevMode(os.Getenv(vllm.EnvServerDevMode))}
	switch {
	case len(args) > 1 || (len(args) == 1 && !c.faithful):
		if !c.faithful {
			return Options{}, fmt.Errorf("unknown command %q: a positional MODEL needs --vllm-faithful", args[0])
		}
		return Options{}, fmt.Errorf("vllm serve takes one positional MODEL, got %d arguments", len(args))
	case len(args) == 1:
		o.Model = args[0]
	}
	for _, n := range c.ignorable {
		if c.fs.Changed(n) {
			o.Ignored = append(o.Ignored, n)
		}
	}
	if len(o.Ignored) > 0 && !c.faithful {
		return Options{}, fmt.Errorf("unknown flag: --%s", o.Ignored[0])
	}
	if err := c.parseSGLang(&o); err != nil {
		return Options{}, err
	}
	if c.port < 0 || c.port > 65535 {
		return Options{}, fmt.Errorf("--port must be in [0, 65535], got %d", c.port)
	}
	o.Addr = net.JoinHostPort(c.host, strconv.Itoa(c.port))
	o.gpusGiven = c.fs.Lookup(GPUsFlag) != nil && c.fs.Changed(GPUsFlag)
	// vLLM runs on tensor-parallel × data-parallel GPUs; the faithful mode
	// takes its GPU count from the command line the same way.
	if c.fs.Changed("data-parallel-size") || ((c.faithful || c.sglang) && !o.gpusGiven) {
		if c.dataParallelSize < 1 {
			return Options{}, fmt.Errorf("--data-parallel-size must be at least 1, got %d", c.dataParallelSize)
		}
		o.dataParallel = c.dataParallelSize
	}
	if o.sglangDP > 0 {
		// SGLang's --dp-size: GPUs = dp-size × tp-size, as vLLM's
		o.dataParallel = o.sglangDP
	}
	for _, st := range c.stalls {
		s, err := ParseStall(st)
		if err != nil {
			return Options{}, fmt.Errorf("--stall: %w", err)
		}
		o.Stalls = append(o.Stalls, s)
	}
	return o, nil
}

// Deployment resolves the deployment the caller describes (its model,
// GPU and engine flags, the positional MODEL among them) with what vllm
// serve derives from its command line: the GPUs are the data-parallel size
// times the tensor-parallel size.
func (o Options) Deployment(spec sim.DeploymentSpec) (sim.Deployment, error) {
	spec, err := o.deploymentSpec(spec)
	if err != nil {
		return sim.Deployment{}, err
	}
	return sim.NewDeployment(spec)
}

// deploymentSpec applies the data-parallel rule to spec.
func (o Options) deploymentSpec(spec sim.DeploymentSpec) (sim.DeploymentSpec, error) {
	spec = o.applySGLang(spec)
	if o.dataParallel == 0 {
		return spec, nil
	}
	gpus := o.dataParallel * spec.TensorParallelSize
	if o.gpusGiven && spec.GPUs != gpus {
		return spec, fmt.Errorf("--%s %d is not --data-parallel-size %d × tensor-parallel size %d", GPUsFlag, spec.GPUs, o.dataParallel, spec.TensorParallelSize)
	}
	spec.GPUs = gpus
	return spec, nil
}

// Server returns c with the command line's part of a server's
// configuration filled in: the deployment, the vLLM-faithful mode and its
// switches, the stalls.
func (o Options) Server(dep sim.Deployment, c Config) Config {
	c.Deployment = dep
	c.VLLMFaithful = o.Faithful
	c.SGLangFaithful = o.SGLang
	c.EnableMetrics = o.EnableMetrics
	c.TokensPerChunk = o.TokensPerChunk
	c.ReasoningField = o.ReasoningField
	c.EnablePromptTokensDetails = o.EnablePromptTokensDetails
	c.DevMode = o.DevMode
	c.Stalls = append(c.Stalls, o.Stalls...)
	return c
}
