package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// Engine kinds.
const (
	EngineSim        = "sim"
	EngineProcess    = "process"
	EngineExternal   = "external"
	EngineKubernetes = "kubernetes"
)

// EngineKinds lists every engine launcher.
var EngineKinds = []string{EngineSim, EngineProcess, EngineExternal, EngineKubernetes}

// Engine describes the deployment: model, hardware, engine flags and the
// launcher that starts one server per trial.
type Engine struct {
	Kind               string         `yaml:"kind" doc:"Launcher: sim (built-in simulator), process (local command), external (already running server), kubernetes."`
	Flavor             string         `yaml:"flavor" doc:"The server's dialect: vllm (vLLM's flags, metrics and cache-reset route; the default), sglang (SGLang's flags, metrics and /flush_cache; its own default search space) or generic (spoc passes only the command template and, per parameter, the arguments engine.generic.params maps it to: no implicit flag). docs/engines.md."`
	Model              string         `yaml:"model" doc:"Model name: a catalog entry (gpt-oss-120b, gpt-oss-20b, llama-3.1-8b, llama-3.1-70b, qwen3-30b-a3b) or a path to a Hugging Face config.json. Also the served model name sent in requests unless served_model_name is set."`
	ServedModelName    string         `yaml:"served_model_name,omitempty" doc:"Model name in API requests when it differs from model (e.g. openai/gpt-oss-120b)."`
	GPU                string         `yaml:"gpu" doc:"GPU type: H100-SXM, H200-SXM, A100-SXM-80GB, B200 (case-insensitive; the short names H100, H200, A100, A100-80GB are aliases), or a name defined in gpu_catalog."`
	GPUCatalog         string         `yaml:"gpu_catalog,omitempty" doc:"Optional YAML file with extra GPU definitions."`
	GPUs               int            `yaml:"gpus" doc:"GPUs in the deployment."`
	TensorParallelSize int            `yaml:"tensor_parallel_size" doc:"Tensor-parallel size (vLLM --tensor-parallel-size); gpus/tensor_parallel_size data-parallel replicas."`
	WeightFormat       string         `yaml:"weight_format" doc:"Expert weight execution format: w4a16 (MXFP4 unpacked to BF16 math, as vLLM runs it on H100), fp4 (native), bf16, fp8."`
	MaxModelLen        int            `yaml:"max_model_len" doc:"Context limit in tokens (vLLM --max-model-len)."`
	Params             map[string]any `yaml:"params" doc:"Engine flags used by run and sweep, in the flavor's names (checked against its flag catalogue: vLLM 0.11's, SGLang 0.5.3's; a generic server's templated parameters); tune samples them from search.space instead. A params section replaces the defaults as a whole: {} starts from the engine's own defaults."`
	Generic            GenericEngine  `yaml:"generic" doc:"Flavor generic: the arguments each parameter becomes, the optional cache-reset route and busy gauges."`
	Sim                SimEngine      `yaml:"sim" doc:"Simulator settings (kind: sim)."`
	Process            ProcessEngine  `yaml:"process" doc:"Local command settings (kind: process)."`
	External           ExternalEngine `yaml:"external" doc:"Already running server (kind: external)."`
	Kubernetes         KubeEngine     `yaml:"kubernetes" doc:"Kubernetes settings (kind: kubernetes)."`
	Compare            []Target       `yaml:"compare,omitempty" doc:"Hardware targets for spoc plan --compare; each runs the same workload and SLA."`
}

// Target is one hardware alternative for a comparison.
type Target struct {
	Name               string `yaml:"name" doc:"Label in the report."`
	GPU                string `yaml:"gpu" doc:"GPU type."`
	GPUs               int    `yaml:"gpus" doc:"GPU count."`
	TensorParallelSize int    `yaml:"tensor_parallel_size" doc:"Tensor-parallel size."`
}

// SimEngine configures the built-in simulator.
type SimEngine struct {
	Calibration string     `yaml:"calibration,omitempty" doc:"Calibration file from spoc sim calibrate; empty uses the built-in factors."`
	Correction  string     `yaml:"correction,omitempty" doc:"Correction file from spoc sim calibrate --records: compute and memory multipliers and a per-step term of the cost model, fitted to live runs of one deployment (docs/fidelity.md); empty: none."`
	TimeScale   float64    `yaml:"time_scale" doc:"Wall-clock speed of spoc sim serve: 1 is real time, 10 runs ten times faster."`
	ErrorRate   float64    `yaml:"error_rate" doc:"Fault injection: fraction of requests answered with HTTP 500."`
	Throttle    []Throttle `yaml:"throttle,omitempty" doc:"Fault injection: GPUs running at a reduced clock."`
}

// Throttle slows one simulated GPU during a window.
type Throttle struct {
	GPU         int      `yaml:"gpu" doc:"GPU index."`
	ClockFactor float64  `yaml:"clock_factor" doc:"Fraction of the normal SM clock, in (0, 1]."`
	Start       Duration `yaml:"start" doc:"When the throttling starts, from the beginning of the run."`
	End         Duration `yaml:"end" doc:"When it stops; 0 means until the end."`
}

// ProcessEngine starts a local server process per trial.
type ProcessEngine struct {
	Command       []string          `yaml:"command" doc:"Argv template (no shell); {{.Port}} and {{.Model}} are substituted; trial flags are appended as --name value."`
	Env           map[string]string `yaml:"env,omitempty" doc:"Extra environment variables."`
	HealthPath    string            `yaml:"health_path" doc:"Path polled until the server answers 200."`
	HealthTimeout Duration          `yaml:"health_timeout" doc:"How long to wait for health before the trial fails."`
	StopTimeout   Duration          `yaml:"stop_timeout" doc:"Grace period between SIGTERM and SIGKILL of the process group."`
	MetricsPath   string            `yaml:"metrics_path" doc:"Prometheus metrics path of the server."`
}

// ExternalEngine is a server spoc does not start.
type ExternalEngine struct {
	URL        string   `yaml:"url" doc:"Base URL of the OpenAI-compatible server (http://host:port)."`
	MetricsURL []string `yaml:"metrics_urls,omitempty" doc:"Prometheus endpoints to scrape (vLLM /metrics, dcgm-exporter)."`
}

// KubeEngine renders and applies a Deployment and Service per trial.
type KubeEngine struct {
	Namespace    string            `yaml:"namespace" doc:"Namespace for trial Deployments."`
	Image        string            `yaml:"image" doc:"Server container image."`
	Args         []string          `yaml:"args,omitempty" doc:"Container args before the trial flags."`
	GPUResource  string            `yaml:"gpu_resource" doc:"Extended resource name for GPUs."`
	Kubectl      string            `yaml:"kubectl" doc:"kubectl binary."`
	Context      string            `yaml:"context,omitempty" doc:"kubectl context."`
	Kubeconfig   string            `yaml:"kubeconfig,omitempty" doc:"kubeconfig file (default: $KUBECONFIG or ~/.kube/config)."`
	ReadyTimeout Duration          `yaml:"ready_timeout" doc:"How long to wait for the Deployment to become ready."`
	StopTimeout  Duration          `yaml:"stop_timeout" doc:"The server pod's termination grace period (terminationGracePeriodSeconds); spoc waits for the deletion that long plus a minute."`
	PortForward  bool              `yaml:"port_forward" doc:"Reach the server through kubectl port-forward instead of the Service address."`
	NodeSelector map[string]string `yaml:"node_selector,omitempty" doc:"Node selector for the server pod."`
	Pod          KubePod           `yaml:"pod" doc:"What the vLLM pod needs: secrets, model cache, shared memory, tolerations, a base manifest (config/kubernetes.go)."`
}

// DefaultEngine is gpt-oss-120b on 4× H100 SXM, TP=4, in the simulator.
func DefaultEngine() Engine {
	ref := sim.ReferenceDeploymentSpec() // the reference deployment lives with the simulator
	return Engine{
		Kind:               EngineSim,
		Flavor:             FlavorVLLM,
		Model:              ref.Model,
		GPU:                ref.GPU,
		GPUs:               ref.GPUs,
		TensorParallelSize: ref.TensorParallelSize,
		WeightFormat:       ref.WeightFormat,
		MaxModelLen:        ref.MaxModelLen,
		Params:             ref.Params,
		Sim:                SimEngine{TimeScale: 1},
		Process: ProcessEngine{
			HealthPath:    vllm.PathHealth,
			HealthTimeout: Duration(20 * 60e9),
			StopTimeout:   Duration(30e9),
			MetricsPath:   vllm.PathMetrics,
		},
		Kubernetes: KubeEngine{
			Namespace:    "spoc",
			Image:        "vllm/vllm-openai:latest",
			GPUResource:  "nvidia.com/gpu",
			Kubectl:      "kubectl",
			ReadyTimeout: Duration(30 * 60e9),
			StopTimeout:  Duration(30e9),
		},
	}
}

// SimDeployment is the deployment the simulator resolves from e (with
// sim.NewDeployment): model, hardware, engine flags, calibration and fault
// injection.
func (e Engine) SimDeployment() sim.DeploymentSpec {
	spec := sim.DeploymentSpec{
		Model: e.Model, ServedModelName: e.ServedModelName,
		GPU: e.GPU, GPUCatalog: e.GPUCatalog, GPUs: e.GPUs, TensorParallelSize: e.TensorParallelSize,
		WeightFormat: e.WeightFormat, MaxModelLen: e.MaxModelLen, Params: e.Params,
		Calibration: e.Sim.Calibration, Correction: e.Sim.Correction,
	}
	if e.flavorName() == FlavorSGLang {
		// the simulator reads SGLang's flags in its vLLM-like terms
		spec.Flavor = sim.FlavorSGLang
	}
	for _, t := range e.Sim.Throttle {
		spec.Throttles = append(spec.Throttles, sim.Throttle{GPU: t.GPU, ClockFactor: t.ClockFactor,
			Start: t.Start.D().Seconds(), End: t.End.D().Seconds()})
	}
	return spec
}

// WeightFormats lists accepted weight formats.
var WeightFormats = []string{"w4a16", "fp4", "bf16", "fp8"}

func (e *Engine) validate(p string, errs *Errors) {
	if !oneOf(e.Kind, EngineKinds) {
		errs.Addf(p+".kind", "unknown engine %q%s (one of %s)", e.Kind, suggest(e.Kind, EngineKinds), quoteList(EngineKinds))
	}
	if strings.TrimSpace(e.Model) == "" {
		errs.Addf(p+".model", "must name a model")
	}
	if e.GPUs < 1 {
		errs.Addf(p+".gpus", "must be at least 1, got %d", e.GPUs)
	}
	if e.TensorParallelSize < 1 {
		errs.Addf(p+".tensor_parallel_size", "must be at least 1, got %d", e.TensorParallelSize)
	} else if e.GPUs >= 1 && e.GPUs%e.TensorParallelSize != 0 {
		hint := ""
		switch {
		case e.TensorParallelSize != DefaultEngine().TensorParallelSize:
		case e.GPUs == 1:
			hint = " (the reference case's default when the key is not set: set it to 1 for one GPU)"
		default:
			hint = fmt.Sprintf(" (the reference case's default when the key is not set: set it to 1 for a replica per GPU, or to %d for one replica over all)", e.GPUs)
		}
		errs.Addf(p+".tensor_parallel_size", "must divide gpus (%d), got %d%s", e.GPUs, e.TensorParallelSize, hint)
	}
	if !oneOf(e.WeightFormat, WeightFormats) {
		errs.Addf(p+".weight_format", "unknown weight format %q (one of %s)", e.WeightFormat, quoteList(WeightFormats))
	}
	if e.MaxModelLen < 256 {
		errs.Addf(p+".max_model_len", "must be at least 256 tokens, got %d", e.MaxModelLen)
	}
	if e.Sim.TimeScale <= 0 {
		errs.Addf(p+".sim.time_scale", "must be positive, got %v", e.Sim.TimeScale)
	}
	if e.Sim.ErrorRate < 0 || e.Sim.ErrorRate > 1 {
		errs.Addf(p+".sim.error_rate", "must be in [0, 1], got %v", e.Sim.ErrorRate)
	}
	for i, t := range e.Sim.Throttle {
		tp := fmt.Sprintf("%s.sim.throttle[%d]", p, i)
		if t.GPU < 0 || t.GPU >= e.GPUs {
			errs.Addf(tp+".gpu", "must be a GPU index in [0, %d), got %d", e.GPUs, t.GPU)
		}
		if !(t.ClockFactor > 0 && t.ClockFactor <= 1) {
			errs.Addf(tp+".clock_factor", "must be in (0, 1], got %v", t.ClockFactor)
		}
		if t.End != 0 && t.End < t.Start {
			errs.Addf(tp+".end", "must be after start (%s), got %s", t.Start, t.End)
		}
	}
	switch e.Kind {
	case EngineProcess:
		if len(e.Process.Command) == 0 {
			errs.Addf(p+".process.command", "kind process needs a command (argv list)")
		}
		if e.Process.HealthTimeout <= 0 {
			errs.Addf(p+".process.health_timeout", "must be positive")
		}
	case EngineExternal:
		if u, err := url.Parse(e.External.URL); e.External.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf(p+".external.url", "kind external needs an http(s) URL, got %q", e.External.URL)
		}
	case EngineKubernetes:
		if e.Kubernetes.Image == "" {
			errs.Addf(p+".kubernetes.image", "kind kubernetes needs an image")
		}
		if e.Kubernetes.Namespace == "" {
			errs.Addf(p+".kubernetes.namespace", "kind kubernetes needs a namespace")
		}
		e.Kubernetes.Pod.validate(p+".kubernetes.pod", errs)
	}
	e.validateNames(p, errs)
	for i, t := range e.Compare {
		tp := fmt.Sprintf("%s.compare[%d]", p, i)
		if t.Name == "" {
			errs.Addf(tp+".name", "must be set")
		}
		if t.GPU == "" {
			errs.Addf(tp+".gpu", "must be set")
		}
		if t.GPUs < 1 {
			errs.Addf(tp+".gpus", "must be at least 1, got %d", t.GPUs)
		}
		if t.TensorParallelSize < 1 || (t.GPUs >= 1 && t.GPUs%t.TensorParallelSize != 0) {
			errs.Addf(tp+".tensor_parallel_size", "must be at least 1 and divide gpus (%d), got %d", t.GPUs, t.TensorParallelSize)
		}
	}
}

// validateNames resolves engine.model, engine.gpu and every
// engine.compare[].gpu by the rule the simulator builds deployments with
// (perfmodel.ResolveModel, perfmodel.ResolveGPU), so a misspelt name fails
// spoc config check, not a trial minutes into a plan; compare targets are
// simulated whatever the engine kind. Relative paths (a config.json model,
// gpu_catalog) are read from the working directory, as the simulator reads
// them.
func (e *Engine) validateNames(p string, errs *Errors) {
	if strings.TrimSpace(e.Model) != "" {
		if _, err := perfmodel.ResolveModel(e.Model); err != nil {
			errs.Addf(p+".model", "%s", unknownNameMsg(err, "a path to a Hugging Face config.json"))
		}
	}
	extra, err := perfmodel.ReadGPUCatalogFile(e.GPUCatalog)
	if err != nil {
		// The GPUs it defines are unknown, so their names cannot be checked.
		errs.Addf(p+".gpu_catalog", "%v", err)
		return
	}
	orMore := "one defined in engine.gpu_catalog"
	if e.GPUCatalog != "" {
		orMore = "one added to " + e.GPUCatalog
	}
	checkGPU := func(path, name string) {
		if _, err := perfmodel.ResolveGPU(name, extra); err != nil {
			errs.Addf(path, "%s", unknownNameMsg(err, orMore))
		}
	}
	checkGPU(p+".gpu", e.GPU)
	for i, t := range e.Compare {
		if t.GPU != "" { // "must be set" is reported with the target
			checkGPU(fmt.Sprintf("%s.compare[%d].gpu", p, i), t.GPU)
		}
	}
}

// unknownNameMsg words a failed model or GPU resolution: for a name in no
// catalog, the closest known name and every accepted one, ending with
// orElse (what else the field accepts); any other failure (an unreadable
// config.json) as it is.
func unknownNameMsg(err error, orElse string) string {
	var ue *perfmodel.UnknownNameError
	if !errors.As(err, &ue) {
		return err.Error()
	}
	kind := ue.Kind
	if kind == "gpu" {
		kind = "GPU"
	}
	if strings.TrimSpace(ue.Name) == "" {
		return fmt.Sprintf("must name a %s: one of %s, or %s", kind, quoteList(ue.Known), orElse)
	}
	// Hugging Face ids are also accepted by their repository name
	// (gpt-oss-120b for openai/gpt-oss-120b); suggest either spelling.
	candidates := slices.Clone(ue.Known)
	for _, k := range ue.Known {
		if i := strings.LastIndexByte(k, '/'); i >= 0 {
			candidates = append(candidates, k[i+1:])
		}
	}
	return fmt.Sprintf("unknown %s %q%s; known: %s, or %s", kind, ue.Name, suggest(ue.Name, candidates), quoteList(ue.Known), orElse)
}
