package perfmodel

import (
	"fmt"
	"math"
	"reflect"
)

// Factors are the cost model's free parameters: achievable fractions of
// datasheet peaks per kernel family, and fixed overheads. Fractions are in
// (0, 1]; durations are seconds ≥ 0. They belong to a model family and an
// engine version, never to a GPU: a prediction for another GPU uses that GPU's
// datasheet through the same formulas. docs/perfmodel.md documents each default.
type Factors struct {
	// DenseCompute and DenseMemory scale tensor-core peak and HBM bandwidth for
	// the dense GEMMs (attention projections, dense MLPs, router, LM head).
	DenseCompute float64 `json:"dense_compute" yaml:"dense_compute"`
	DenseMemory  float64 `json:"dense_memory" yaml:"dense_memory"`
	// AttentionCompute and AttentionMemory scale the peaks for the attention
	// kernel (FlashAttention-style prefill and paged decode).
	AttentionCompute float64 `json:"attention_compute" yaml:"attention_compute"`
	AttentionMemory  float64 `json:"attention_memory" yaml:"attention_memory"`
	// MoECompute and MoEMemory scale the peaks for the fused MoE expert GEMMs;
	// for W4A16 the compute fraction absorbs the cost of unpacking weights.
	MoECompute float64 `json:"moe_compute" yaml:"moe_compute"`
	MoEMemory  float64 `json:"moe_memory" yaml:"moe_memory"`
	// MoEFP8Compute and MoEFP8Memory are the same for expert GEMMs whose math
	// runs at the FP8 (or FP4) tensor-core rate: FP8 checkpoints, MXFP4
	// weights × MXFP8 activations (System.MoEClass).
	MoEFP8Compute float64 `json:"moe_fp8_compute" yaml:"moe_fp8_compute"`
	MoEFP8Memory  float64 `json:"moe_fp8_memory" yaml:"moe_fp8_memory"`
	// ElementwiseMemory scales HBM bandwidth for norms, residual adds, rotary
	// embedding, and sampling.
	ElementwiseMemory float64 `json:"elementwise_memory" yaml:"elementwise_memory"`
	// Network scales NVLink bandwidth for the tensor-parallel all-reduce.
	Network float64 `json:"network" yaml:"network"`

	// StepOverheadSeconds is the engine's CPU time per step: scheduling,
	// input preparation, sampling bookkeeping. Step adds it to the Overhead
	// term; an engine with async scheduling (vLLM's --async-scheduling, sim's
	// AsyncScheduling, the calibration replay) hides it, and
	// PerSeqOverheadSeconds, behind the GPU's previous step.
	StepOverheadSeconds float64 `json:"step_overhead_seconds" yaml:"step_overhead_seconds"`
	// PerSeqOverheadSeconds is CPU time per sequence in the batch (per-request
	// bookkeeping, detokenisation, output processing), hidden like
	// StepOverheadSeconds under async scheduling.
	PerSeqOverheadSeconds float64 `json:"per_seq_overhead_seconds" yaml:"per_seq_overhead_seconds"`
	// GraphKernelSeconds is the per-kernel cost inside a replayed CUDA graph
	// (launch gap and tail of each small kernel); GPU-side, never hidden.
	GraphKernelSeconds float64 `json:"graph_kernel_seconds" yaml:"graph_kernel_seconds"`
	// EagerKernelSeconds is the per-kernel cost when kernels are launched one by
	// one from Python (eager mode, or batches above the graph capture size).
	EagerKernelSeconds float64 `json:"eager_kernel_seconds" yaml:"eager_kernel_seconds"`
	// AllReduceLatencySeconds is the fixed latency of one tensor-parallel collective.
	AllReduceLatencySeconds float64 `json:"all_reduce_latency_seconds" yaml:"all_reduce_latency_seconds"`

	// RequestOverheadSeconds and PromptTokenOverheadSeconds are API-server time
	// (HTTP, tokenisation, detokenisation of the first token), not GPU time: the
	// simulator adds RequestOverheadSeconds + PromptTokenOverheadSeconds × prompt
	// tokens to each request's time to first token.
	RequestOverheadSeconds     float64 `json:"request_overhead_seconds" yaml:"request_overhead_seconds"`
	PromptTokenOverheadSeconds float64 `json:"prompt_token_overhead_seconds" yaml:"prompt_token_overhead_seconds"`
}

// UncalibratedFactors are first-principles defaults used for model families
// without a calibration: typical achieved fractions of peak reported for
// cuBLAS GEMMs, FlashAttention and NCCL on Hopper (docs/perfmodel.md).
var UncalibratedFactors = Factors{
	DenseCompute: 0.70, DenseMemory: 0.80,
	AttentionCompute: 0.50, AttentionMemory: 0.70,
	MoECompute: 0.40, MoEMemory: 0.70, MoEFP8Compute: 0.40, MoEFP8Memory: 0.70,
	ElementwiseMemory: 0.60, Network: 0.80,
	StepOverheadSeconds: 1e-3, PerSeqOverheadSeconds: 5e-6,
	GraphKernelSeconds: 2e-6, EagerKernelSeconds: 6e-6, AllReduceLatencySeconds: 8e-6,
	RequestOverheadSeconds: 10e-3, PromptTokenOverheadSeconds: 2e-6,
}

// FactorNames lists the field names of Factors in declaration order, as used
// by Get and Set (the JSON names).
func FactorNames() []string {
	t := reflect.TypeFor[Factors]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Tag.Get("json")
	}
	return names
}

// IsFraction reports whether the named factor is a fraction of a peak (in
// (0, 1]) rather than a duration in seconds.
func IsFraction(name string) bool {
	_, ok := fractionFields[name]
	return ok
}

var fractionFields = map[string]bool{
	"dense_compute": true, "dense_memory": true, "attention_compute": true, "attention_memory": true,
	"moe_compute": true, "moe_memory": true, "moe_fp8_compute": true, "moe_fp8_memory": true, "elementwise_memory": true, "network": true,
}

func (f *Factors) field(name string) (reflect.Value, error) {
	t := reflect.TypeFor[Factors]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("json") == name {
			return reflect.ValueOf(f).Elem().Field(i), nil
		}
	}
	return reflect.Value{}, fmt.Errorf("unknown factor %q", name)
}

// Get returns the factor with the given JSON name.
func (f Factors) Get(name string) (float64, error) {
	v, err := f.field(name)
	if err != nil {
		return 0, err
	}
	return v.Float(), nil
}

// Set changes the factor with the given JSON name.
func (f *Factors) Set(name string, value float64) error {
	v, err := f.field(name)
	if err != nil {
		return err
	}
	v.SetFloat(value)
	return nil
}

// Validate checks fractions are in (0, 1] and durations are finite and ≥ 0.
func (f Factors) Validate() error {
	for _, name := range FactorNames() {
		v, _ := f.Get(name)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("factor %s: %g is not finite", name, v)
		}
		if fractionFields[name] {
			if v <= 0 || v > 1 {
				return fmt.Errorf("factor %s: %g is not a fraction in (0, 1]", name, v)
			}
		} else if v < 0 {
			return fmt.Errorf("factor %s: %g seconds is negative", name, v)
		}
	}
	return nil
}

// RequestOverhead is the API-server time added to a request's time to first
// token for a prompt of the given length.
func (f Factors) RequestOverhead(promptTokens int) float64 {
	return f.RequestOverheadSeconds + f.PromptTokenOverheadSeconds*float64(promptTokens)
}
