package sim

import (
	"fmt"
	"strings"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/vllm"
)

// Deployment is what the simulator serves: a model on GPUs with engine
// flags. GPUs/TensorParallelSize replicas (vLLM data parallelism) each run
// their own Engine and KV cache; requests go to the least loaded replica.
type Deployment struct {
	Model              perfmodel.Model
	GPU                perfmodel.GPU
	GPUs               int
	TensorParallelSize int
	// WeightFormat is how expert weights execute ("" or "auto": as vLLM
	// would; w4a16, fp4, bf16, fp8).
	WeightFormat string
	MaxModelLen  int
	Params       EngineParams
	// Flavor is the engine whose flags a trial's parameters are:
	// FlavorSGLang, or "" for vLLM's (ApplyParams).
	Flavor string
	// Factors override the cost model's defaults (a calibration); zero
	// means perfmodel.DefaultFactors.
	Factors perfmodel.Factors
	// Throttles slow GPUs; GPU indices are global (0 … GPUs-1) and times are
	// seconds from the start of the run.
	Throttles []Throttle
	// Correction adjusts the cost model to one measured deployment
	// (correction.go); the zero value changes nothing.
	Correction Correction
	// ServedModelName is the model name of the API and metrics; empty means
	// the catalog name.
	ServedModelName string
	// Fleet is the router in front of the replicas; the zero value is
	// least-loaded.
	Fleet Fleet
}

// Replicas is the number of replicas (data-parallel groups, servers, pods)
// the deployment's GPUs make: GPUs / TensorParallelSize, each replica one
// tensor-parallel group of TensorParallelSize GPUs with its own engine and
// KV cache. Unset sizes count as one; a size that does not divide the GPUs
// is an error. This is the one place spoc does this arithmetic.
func (d Deployment) Replicas() (int, error) {
	return ReplicasOf(d.GPUs, d.TensorParallelSize)
}

// ReplicasOf is the replica arithmetic every part of spoc uses (the
// simulated cluster, the process launcher's servers and router, the
// Kubernetes launcher's pods, the configuration's checks): gpus GPUs in
// groups of tensorParallelSize make gpus / tensorParallelSize replicas,
// replica r holding GPUs r·tp … r·tp + tp − 1. Unset (zero) sizes count
// as one; a size that does not divide the GPUs is an error.
func ReplicasOf(gpus, tensorParallelSize int) (int, error) {
	tp := max(tensorParallelSize, 1)
	gpus = max(gpus, tp)
	if gpus%tp != 0 {
		return 0, fmt.Errorf("deployment: tensor parallel size %d does not divide %d GPUs", tp, gpus)
	}
	return gpus / tp, nil
}

// ReplicaGPUs are the global indices of replica r's GPUs in groups of
// tensorParallelSize (ReplicasOf): what CUDA_VISIBLE_DEVICES lists for
// that replica's server.
func ReplicaGPUs(r, tensorParallelSize int) []int {
	tp := max(tensorParallelSize, 1)
	gpus := make([]int, tp)
	for i := range gpus {
		gpus[i] = r*tp + i
	}
	return gpus
}

// DeploymentSpec names a deployment before it is resolved: the model and
// GPU by catalog name or file, engine flags as vLLM names, and the
// calibration file. Package config builds it from the engine section.
type DeploymentSpec struct {
	// Model is a catalog name or a Hugging Face config.json path.
	Model string
	// ServedModelName is the model name of the API; empty means Model.
	ServedModelName string
	// GPU is a catalog name or one defined in GPUCatalog.
	GPU string
	// GPUCatalog is an optional YAML file of extra GPU definitions.
	GPUCatalog         string
	GPUs               int
	TensorParallelSize int
	// WeightFormat is how expert weights execute (see Deployment).
	WeightFormat string
	MaxModelLen  int
	// Params are engine flags by vLLM name (ParamsFromMap), or by SGLang
	// name when Flavor is FlavorSGLang (SGLangParams).
	Params map[string]any
	// Flavor is FlavorSGLang for a deployment of SGLang's flags, "" for
	// vLLM's.
	Flavor string
	// Calibration is a file from spoc sim calibrate; empty uses the
	// built-in factors.
	Calibration string
	// Throttles slow GPUs (fault injection).
	Throttles []Throttle
	// Correction is a file from spoc sim calibrate --records; empty: none.
	Correction string
	// Fleet is the router in front of the replicas (Deployment.Fleet).
	Fleet Fleet
}

// NewDeployment resolves the model, GPU, engine flags and calibration of
// spec. Error messages name the engine section's fields (engine.model,
// engine.params, ...), where users set them.
func NewDeployment(spec DeploymentSpec) (Deployment, error) {
	model, err := perfmodel.ResolveModel(spec.Model)
	if err != nil {
		return Deployment{}, fmt.Errorf("engine.model: %w", err)
	}
	extra, err := perfmodel.ReadGPUCatalogFile(spec.GPUCatalog)
	if err != nil {
		return Deployment{}, fmt.Errorf("engine.gpu_catalog: %w", err)
	}
	gpu, err := perfmodel.ResolveGPU(spec.GPU, extra)
	if err != nil {
		return Deployment{}, fmt.Errorf("engine.gpu: %w", err)
	}
	specParams := spec.Params
	if spec.Flavor == FlavorSGLang {
		if specParams, _, err = SGLangParams(spec.Params); err != nil {
			return Deployment{}, fmt.Errorf("engine.params: %w", err)
		}
	}
	p, err := ParamsFromMap(specParams)
	if err != nil {
		return Deployment{}, fmt.Errorf("engine.params: %w", err)
	}
	d := Deployment{
		Model: model, GPU: gpu, GPUs: spec.GPUs, TensorParallelSize: spec.TensorParallelSize,
		WeightFormat: spec.WeightFormat, MaxModelLen: spec.MaxModelLen, Params: p, Flavor: spec.Flavor,
		ServedModelName: vllm.ServedName(spec.Model, spec.ServedModelName),
		Fleet:           spec.Fleet,
	}
	if spec.Calibration != "" {
		f, err := LoadCalibration(spec.Calibration)
		if err != nil {
			return Deployment{}, fmt.Errorf("engine.sim.calibration: %w", err)
		}
		d.Factors = f
	}
	if spec.Correction != "" {
		c, err := LoadCorrection(spec.Correction)
		if err != nil {
			return Deployment{}, fmt.Errorf("engine.sim.correction: %w", err)
		}
		d.Correction = c
	}
	d.Throttles = append(d.Throttles, spec.Throttles...)
	return d, nil
}

// ReferenceDeploymentSpec is the reference case of DESIGN.md as the
// simulator sees it: gpt-oss-120b on 4× H100 SXM, TP=4, w4a16 experts, a
// 131072-token context and the default engine flags. It equals the default
// engine section of a plan file (config checks that), so tests and
// benchmarks of the simulator need not load a config.
func ReferenceDeploymentSpec() DeploymentSpec {
	return DeploymentSpec{
		Model:              "gpt-oss-120b",
		GPU:                "H100-SXM",
		GPUs:               4,
		TensorParallelSize: 4,
		WeightFormat:       "w4a16",
		MaxModelLen:        131072,
		Params: map[string]any{
			"max-num-batched-tokens": 8192,
			"max-num-seqs":           256,
			"gpu-memory-utilization": 0.9,
			"enable-prefix-caching":  true,
			"enable-chunked-prefill": true,
			"block-size":             16,
		},
	}
}

// Cluster is a built deployment: the cost model and one Engine per
// data-parallel replica, with the router (Deployment.Fleet) that spreads
// requests over them.
// RunVirtual drives one in virtual time; the HTTP server (package
// sim/serve) drives one in scaled wall-clock time. Like Engine it is not
// safe for concurrent use.
type Cluster struct {
	dep      Deployment
	system   *perfmodel.System
	engines  []*Engine
	kvTokens int
	router   router
	// serving maps the router's indexes to replicas when it serves a
	// subset (Serve); gen counts the routers Serve built
	serving []int
	gen     int32
}

// Build prices the deployment and creates its engines, each with an empty
// KV cache.
func (d Deployment) Build() (*Cluster, error) {
	replicas, err := d.Replicas()
	if err != nil {
		return nil, err
	}
	tp := max(d.TensorParallelSize, 1)
	gpus := replicas * tp
	if err := d.Fleet.Validate(replicas); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	if err := d.Correction.Normal().Validate(); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	p := d.Params
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	maxLen := d.MaxModelLen
	if p.MaxModelLen > 0 {
		maxLen = p.MaxModelLen
	}
	if maxLen <= 0 {
		maxLen = d.Model.MaxContext
	}
	if d.Model.MaxContext > 0 && maxLen > d.Model.MaxContext {
		return nil, fmt.Errorf("deployment: max-model-len %d exceeds %s's context of %d", maxLen, d.Model.Name, d.Model.MaxContext)
	}
	opts := perfmodel.SystemOptions{
		TensorParallel: tp, GPUs: gpus, CUDAGraphs: !p.EnforceEager,
		MaxNumBatchedTokens: p.MaxNumBatchedTokens, MaxNumSeqs: p.MaxNumSeqs, BlockSize: p.BlockSize,
		Factors: d.Factors,
	}
	if f := strings.ToLower(d.WeightFormat); f != "" && f != "auto" {
		wf, err := perfmodel.ParseWeightFormat(f)
		if err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
		opts.WeightFormat = wf
	}
	if p.KVCacheDtype != "" && p.KVCacheDtype != "auto" {
		kd, err := perfmodel.ParseKVCacheDtype(p.KVCacheDtype)
		if err != nil {
			return nil, fmt.Errorf("deployment: kv-cache-dtype: %w", err)
		}
		opts.KVCacheDtype = kd
	}
	sys, err := perfmodel.NewSystem(d.Model, d.GPU, opts)
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	kvTokens, err := sys.KVCacheTokens(p.GPUMemoryUtilization)
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	bs := p.BlockSize
	big := maxLen
	slide := (sys.KVTokensForSeq(big) - (big+bs-1)/bs*bs + bs - 1) / bs
	f := sys.Factors()
	hidden := func(seqs int) float64 { return f.StepOverheadSeconds + f.PerSeqOverheadSeconds*float64(seqs) }
	cost, err := corrected(sys, d.Correction)
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	c := &Cluster{dep: d, system: sys, kvTokens: kvTokens}
	for r := range replicas {
		var th []Throttle
		for i, t := range d.Throttles {
			if t.GPU < 0 || t.GPU >= gpus {
				return nil, fmt.Errorf("deployment: throttle %d: GPU %d is not in [0, %d)", i, t.GPU, gpus)
			}
			if t.GPU/tp == r {
				t.GPU -= r * tp
				th = append(th, t)
			}
		}
		e, err := NewEngine(EngineConfig{
			Params: p, MaxModelLen: maxLen, KVBlocks: kvTokens / bs, SlidingBlocksPerSeq: max(slide, 0),
			Cost: cost, HiddenOverhead: hidden, TPSize: tp, Throttles: th,
		})
		if err != nil {
			return nil, fmt.Errorf("deployment: replica %d: %w", r, err)
		}
		c.engines = append(c.engines, e)
	}
	if c.router, err = newRouter(d.Fleet, c.engines); err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	return c, nil
}

// Route picks the replica for a new request the least-loaded way, whatever
// the cluster's router: the one with the fewest running plus waiting
// requests, the lowest index on ties. Assign applies the cluster's router.
func (c *Cluster) Route() int { return leastLoadedOf(c.engines) }

// MaxModelLen is the engines' context limit in tokens.
func (c *Cluster) MaxModelLen() int { return c.engines[0].maxModelLen }

// ModelName is the name the deployment is served under (vllm.ServedName).
func (c *Cluster) ModelName() string {
	return vllm.ServedName(c.dep.Model.Name, c.dep.ServedModelName)
}

// Engines are the replicas' engines, indexed by replica. The slice is the
// cluster's own; callers drive the engines but must not change it.
func (c *Cluster) Engines() []*Engine { return c.engines }

// Deployment is what the cluster was built from.
func (c *Cluster) Deployment() Deployment { return c.dep }

// Factors are the cost model's factors after defaults and calibration; the
// API server's per-request overhead comes from them.
func (c *Cluster) Factors() perfmodel.Factors { return c.system.Factors() }
