package calibrate

import (
	"fmt"
	"strconv"
	"strings"
)

// Metrics are the three quantities a point is fitted on.
type Metrics struct {
	// OutputThroughputPerGPU is generated tokens per second over the whole
	// benchmark, divided by the number of GPUs.
	OutputThroughputPerGPU float64 `json:"output_throughput_per_gpu"`
	// MedianTPOTSeconds is the median over requests of (end − first token) /
	// (output tokens − 1).
	MedianTPOTSeconds float64 `json:"median_tpot_seconds"`
	// MedianTTFTSeconds is the median time to first token.
	MedianTTFTSeconds float64 `json:"median_ttft_seconds"`
}

// Metric names, used as keys of MAPE tables.
const (
	MetricThroughput = "output_throughput_per_gpu"
	MetricTPOT       = "median_tpot"
	MetricTTFT       = "median_ttft"
)

// MetricNames lists the fitted metrics in report order.
var MetricNames = []string{MetricThroughput, MetricTPOT, MetricTTFT}

// Get returns a metric by name.
func (m Metrics) Get(name string) float64 {
	switch name {
	case MetricThroughput:
		return m.OutputThroughputPerGPU
	case MetricTPOT:
		return m.MedianTPOTSeconds
	case MetricTTFT:
		return m.MedianTTFTSeconds
	}
	return 0
}

// Server holds the engine flags of a point that the replay honours. Zero
// fields take the defaults of DefaultServer.
type Server struct {
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens,omitempty"`
	MaxNumSeqs           int     `json:"max_num_seqs,omitempty"` // 0: the point's concurrency
	CUDAGraphMaxTokens   int     `json:"cuda_graph_max_tokens,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	MaxModelLen          int     `json:"max_model_len,omitempty"`
	// SyncScheduling turns vLLM's async scheduling off: the CPU overhead of
	// each step is then added to it instead of hidden behind the GPU.
	SyncScheduling bool `json:"sync_scheduling,omitempty"`
	// Engine is the engine and version that served the point ("vllm 0.13.0"),
	// an input of the fit: errors are reported per engine version.
	Engine string `json:"engine,omitempty"`
	// KVCacheDtype is vLLM's --kv-cache-dtype ("" or "auto": BF16).
	KVCacheDtype string `json:"kv_cache_dtype,omitempty"`
	// MoEKernel is the expert-GEMM implementation (perfmodel.ParseMoEKernel).
	MoEKernel string `json:"moe_kernel,omitempty"`
	// FusedAllReduceNorm is vLLM's fuse_allreduce_rms compilation pass.
	FusedAllReduceNorm bool `json:"fused_allreduce_norm,omitempty"`
}

// DefaultServer are the flags of the reference measurements
// (shared/data/calibration/README.md): vLLM 0.13 serving gpt-oss-120b with
// max-num-batched-tokens 8192, max-num-seqs = concurrency,
// max-cudagraph-capture-size 2048, gpu-memory-utilization 0.9, async
// scheduling, no prefix caching.
var DefaultServer = Server{MaxNumBatchedTokens: 8192, CUDAGraphMaxTokens: 2048, GPUMemoryUtilization: 0.9}

// Point is one measured benchmark run.
type Point struct {
	// Source names where the point came from ("file.csv:12").
	Source string `json:"source"`
	// Model and GPU are catalog names (perfmodel.LookupModel/LookupGPU);
	// an empty Model is filled from FitOptions.Model.
	Model          string `json:"model"`
	GPU            string `json:"gpu"`
	TensorParallel int    `json:"tensor_parallel"`
	GPUs           int    `json:"gpus"`
	// InputLen and OutputLen are the maximum lengths L; each request's length
	// is uniform in [RangeRatio·L, L].
	InputLen    int     `json:"input_len"`
	OutputLen   int     `json:"output_len"`
	RangeRatio  float64 `json:"range_ratio"`
	NumPrompts  int     `json:"num_prompts"`
	Concurrency int     `json:"concurrency"`
	// InputLens and OutputLens, when set, are the exact per-request lengths
	// (from a detailed benchmark result) and replace the uniform draw.
	InputLens  []int   `json:"input_lens,omitempty"`
	OutputLens []int   `json:"output_lens,omitempty"`
	Server     Server  `json:"server"`
	Measured   Metrics `json:"measured"`
}

// Key identifies the point's deployment and workload; repeated runs of the
// same configuration share a key and a prediction.
func (p *Point) Key() string {
	return strings.Join([]string{p.Model, strings.ToLower(p.GPU), strconv.Itoa(p.TensorParallel), strconv.Itoa(p.GPUs),
		strconv.Itoa(p.InputLen), strconv.Itoa(p.OutputLen), strconv.FormatFloat(p.RangeRatio, 'g', -1, 64),
		strconv.Itoa(p.NumPrompts), strconv.Itoa(p.Concurrency), fmt.Sprint(p.Server),
		strconv.Itoa(len(p.InputLens)), strconv.Itoa(len(p.OutputLens))}, "|")
}

// server returns the point's flags with defaults filled in.
func (p *Point) server() Server {
	s := p.Server
	if s.MaxNumBatchedTokens == 0 {
		s.MaxNumBatchedTokens = DefaultServer.MaxNumBatchedTokens
	}
	if s.MaxNumSeqs == 0 {
		s.MaxNumSeqs = p.Concurrency
	}
	if s.CUDAGraphMaxTokens == 0 {
		s.CUDAGraphMaxTokens = DefaultServer.CUDAGraphMaxTokens
	}
	if s.GPUMemoryUtilization == 0 {
		s.GPUMemoryUtilization = DefaultServer.GPUMemoryUtilization
	}
	return s
}

// Validate checks the point can be replayed and compared.
func (p *Point) Validate() error {
	switch {
	case p.Model == "":
		return fmt.Errorf("point %s: no model", p.Source)
	case p.GPU == "":
		return fmt.Errorf("point %s: no GPU", p.Source)
	case p.TensorParallel <= 0 || p.GPUs < p.TensorParallel:
		return fmt.Errorf("point %s: tensor parallel %d with %d GPUs", p.Source, p.TensorParallel, p.GPUs)
	case p.Concurrency <= 0 || p.NumPrompts <= 0:
		return fmt.Errorf("point %s: concurrency %d and num prompts %d must be positive", p.Source, p.Concurrency, p.NumPrompts)
	case len(p.InputLens) == 0 && (p.InputLen <= 0 || p.OutputLen <= 0):
		return fmt.Errorf("point %s: input and output lengths must be positive", p.Source)
	case len(p.InputLens) == 0 && !(p.RangeRatio > 0 && p.RangeRatio <= 1):
		return fmt.Errorf("point %s: range ratio %g not in (0, 1]", p.Source, p.RangeRatio)
	case len(p.InputLens) != len(p.OutputLens):
		return fmt.Errorf("point %s: %d input lengths for %d output lengths", p.Source, len(p.InputLens), len(p.OutputLens))
	}
	for _, name := range MetricNames {
		if v := p.Measured.Get(name); !(v > 0) {
			return fmt.Errorf("point %s: measured %s %g is not positive", p.Source, name, v)
		}
	}
	return nil
}
