package perfmodel

import (
	"errors"
	"fmt"
	"math"
)

// SystemOptions configures one serving deployment of a model on GPUs.
type SystemOptions struct {
	// TensorParallel is the tensor-parallel size of one engine replica
	// (default 1).
	TensorParallel int
	// GPUs is the total number of GPUs; it must be a multiple of
	// TensorParallel (default TensorParallel). GPUs/TensorParallel replicas
	// serve independently; Step and KVCacheTokens describe one replica.
	GPUs int
	// WeightFormat overrides how the quantizable weights run (the experts only
	// for checkpoints that quantize experts only). FormatDefault runs the
	// checkpoint's format, as W4A16 when the GPU lacks native FP4.
	WeightFormat WeightFormat
	// KVCacheDtype is the KV cache element type (default BF16).
	KVCacheDtype KVCacheDtype
	// MoEKernel is the engine's expert-GEMM implementation (default: the
	// resolved expert weight format decides; see MoEClass).
	MoEKernel MoEKernel
	// FusedAllReduceNorm is vLLM's fuse_allreduce_rms compilation pass: each
	// tensor-parallel all-reduce runs fused with the residual add and RMSNorm
	// that follow it, so those kernels and their HBM passes disappear.
	FusedAllReduceNorm bool
	// CUDAGraphs replays captured CUDA graphs for steps of at most
	// CUDAGraphMaxTokens tokens; the zero value is eager mode.
	CUDAGraphs bool
	// CUDAGraphMaxTokens is vLLM's max_cudagraph_capture_size (default 512).
	CUDAGraphMaxTokens int
	// MaxNumBatchedTokens and MaxNumSeqs size the activation reserve the way
	// vLLM's profiling run does (defaults 8192 and 256).
	MaxNumBatchedTokens int
	MaxNumSeqs          int
	// BlockSize is the KV cache block size in tokens (default 16).
	BlockSize int
	// Factors are the cost model's parameters; the zero value means
	// DefaultFactors(model).
	Factors Factors
	// ClockFactors gives each GPU of the replica its SM clock as a fraction of
	// boost (thermal or power throttling); nil means 1 for all. The slowest
	// rank sets the pace of every tensor-parallel step.
	ClockFactors []float64
}

// System is a model deployed on GPUs: it prices engine steps and sizes the KV
// cache. It is immutable and safe for concurrent use.
type System struct {
	model   Model
	gpu     GPU
	opts    SystemOptions
	factors Factors

	expertFormat, denseFormat WeightFormat
	clock                     float64
	sms                       float64 // SMs per GPU, for SM-active estimates (1 when unknown)
	c                         stepConstants
}

// Default option values.
const (
	DefaultCUDAGraphMaxTokens  = 512
	DefaultMaxNumBatchedTokens = 8192
	DefaultMaxNumSeqs          = 256
	DefaultBlockSize           = 16
)

// ErrNoFP4 is returned by NewSystem when native FP4 is asked of a GPU without
// FP4 tensor cores.
var ErrNoFP4 = errors.New("GPU has no native FP4 tensor cores (use W4A16)")

// NewSystem validates the model, GPU and options and precomputes the per-step
// constants.
func NewSystem(model Model, gpu GPU, opts SystemOptions) (*System, error) {
	if err := model.Validate(); err != nil {
		return nil, fmt.Errorf("new system: %w", err)
	}
	if err := gpu.Validate(); err != nil {
		return nil, fmt.Errorf("new system: %w", err)
	}
	if opts.TensorParallel == 0 {
		opts.TensorParallel = 1
	}
	if opts.GPUs == 0 {
		opts.GPUs = opts.TensorParallel
	}
	if opts.TensorParallel < 0 || opts.GPUs < 0 || opts.GPUs%opts.TensorParallel != 0 {
		return nil, fmt.Errorf("new system: %d GPUs is not a positive multiple of tensor parallel size %d", opts.GPUs, opts.TensorParallel)
	}
	if model.NumAttentionHeads%opts.TensorParallel != 0 {
		return nil, fmt.Errorf("new system: %d attention heads do not split over tensor parallel size %d",
			model.NumAttentionHeads, opts.TensorParallel)
	}
	for _, p := range []struct {
		v    *int
		def  int
		name string
	}{
		{&opts.CUDAGraphMaxTokens, DefaultCUDAGraphMaxTokens, "cuda graph max tokens"},
		{&opts.MaxNumBatchedTokens, DefaultMaxNumBatchedTokens, "max num batched tokens"},
		{&opts.MaxNumSeqs, DefaultMaxNumSeqs, "max num seqs"},
		{&opts.BlockSize, DefaultBlockSize, "block size"},
	} {
		if *p.v == 0 {
			*p.v = p.def
		}
		if *p.v < 0 {
			return nil, fmt.Errorf("new system: %s %d is negative", p.name, *p.v)
		}
	}
	s := &System{model: model, gpu: gpu, opts: opts, factors: opts.Factors, clock: 1, sms: float64(max(gpu.SMCount, 1))}
	if s.factors == (Factors{}) {
		s.factors = DefaultFactors(model)
	}
	if err := s.factors.Validate(); err != nil {
		return nil, fmt.Errorf("new system: %w", err)
	}
	if len(opts.ClockFactors) > 0 {
		if len(opts.ClockFactors) != opts.TensorParallel {
			return nil, fmt.Errorf("new system: %d clock factors for tensor parallel size %d", len(opts.ClockFactors), opts.TensorParallel)
		}
		for i, c := range opts.ClockFactors {
			if !(c > 0 && c <= 1) {
				return nil, fmt.Errorf("new system: clock factor of GPU %d is %g, want (0, 1]", i, c)
			}
			s.clock = math.Min(s.clock, c)
		}
		s.opts.ClockFactors = append([]float64(nil), opts.ClockFactors...)
	}
	if err := s.resolveFormats(); err != nil {
		return nil, fmt.Errorf("new system: %w", err)
	}
	s.precompute()
	return s, nil
}

// resolveFormats decides the storage and math format of expert and dense weights.
func (s *System) resolveFormats() error {
	q := s.model.Quantization
	quantized := FormatBF16
	if q.Format != FormatDefault {
		quantized = q.Format
	}
	if s.opts.WeightFormat != FormatDefault {
		quantized = s.opts.WeightFormat
	} else if quantized == FormatFP4 && s.gpu.FP4FLOPS == 0 {
		quantized = FormatW4A16 // vLLM runs MXFP4 as W4A16 (Marlin) on GPUs without FP4
	}
	if quantized == FormatFP4 && s.gpu.FP4FLOPS == 0 {
		return fmt.Errorf("weight format fp4 on %s: %w", s.gpu.Name, ErrNoFP4)
	}
	switch s.opts.MoEKernel {
	case MoEKernelW4A16:
		if quantized == FormatFP4 {
			quantized = FormatW4A16 // the same MXFP4 weights, unpacked to BF16
		}
	case MoEKernelMXFP4xMXFP8:
		if s.gpu.FP8FLOPS == 0 {
			return fmt.Errorf("moe kernel %s on %s: GPU has no FP8 tensor cores", s.opts.MoEKernel, s.gpu.Name)
		}
		if quantized != FormatFP4 && quantized != FormatW4A16 {
			return fmt.Errorf("moe kernel %s needs MXFP4 expert weights, not %s", s.opts.MoEKernel, quantized)
		}
		quantized = FormatFP4 // 4.25-bit storage; the math rate is FP8 (moePeak)
	}
	s.expertFormat, s.denseFormat = quantized, quantized
	if q.ExpertsOnly && s.model.IsMoE() {
		s.denseFormat = FormatBF16
	}
	return nil
}

// peak is the tensor-core FLOP/s a weight format multiplies at on this GPU.
func (s *System) peak(f WeightFormat) float64 {
	switch f {
	case FormatFP8:
		if s.gpu.FP8FLOPS > 0 {
			return s.gpu.FP8FLOPS
		}
	case FormatFP4:
		return s.gpu.FP4FLOPS
	}
	return s.gpu.BF16FLOPS // BF16, and W4A16 / W8A16 which unpack to BF16
}

// Model returns the deployed model.
func (s *System) Model() Model { return s.model }

// GPU returns the GPU datasheet.
func (s *System) GPU() GPU { return s.gpu }

// Options returns the options with defaults filled in.
func (s *System) Options() SystemOptions { return s.opts }

// Factors returns the factors in use.
func (s *System) Factors() Factors { return s.factors }

// ExpertFormat and DenseFormat return the resolved weight formats.
func (s *System) ExpertFormat() WeightFormat { return s.expertFormat }

// DenseFormat returns the resolved format of non-expert linear weights.
func (s *System) DenseFormat() WeightFormat { return s.denseFormat }

// ClockFactor is the slowest rank's clock fraction, which paces every step.
func (s *System) ClockFactor() float64 { return s.clock }

// WithClockFactors returns a copy of s whose GPUs run at the given clock
// fractions (one per tensor-parallel rank), for injecting thermal throttling.
func (s *System) WithClockFactors(factors []float64) (*System, error) {
	o := s.opts
	o.ClockFactors = factors
	return NewSystem(s.model, s.gpu, o)
}

// WithFactors returns a copy of s using other cost-model factors.
func (s *System) WithFactors(f Factors) (*System, error) {
	o := s.opts
	o.Factors = f
	return NewSystem(s.model, s.gpu, o)
}
