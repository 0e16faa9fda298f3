package perfmodel

import (
	"errors"
	"fmt"
	"math"
)

// Memory reserves outside weights and KV cache (docs/perfmodel.md, "KV capacity").
const (
	// nonTorchReserveBytes covers the CUDA context, cuBLAS workspaces and NCCL
	// buffers, which vLLM counts against gpu_memory_utilization.
	nonTorchReserveBytes = 1.0 * gib
	// graphReserveBytes is the memory of captured CUDA graphs.
	graphReserveBytes = 0.5 * gib
)

// WeightBytesPerGPU is the memory one tensor-parallel rank holds for weights.
func (s *System) WeightBytesPerGPU() float64 {
	p := s.model.Params()
	t := float64(s.opts.TensorParallel)
	dense := (p.Attention + p.DenseMLP) * s.denseFormat.BytesPerWeight()
	return (dense+p.Experts*s.expertFormat.BytesPerWeight()+p.Embeddings*bf16Bytes)/t + p.Router*bf16Bytes
}

// ActivationReserveBytesPerGPU estimates the peak activation memory vLLM's
// profiling run measures (a step of MaxNumBatchedTokens tokens and MaxNumSeqs
// sampled sequences) plus CUDA graphs and non-torch allocations.
func (s *System) ActivationReserveBytesPerGPU() float64 {
	m := &s.model
	t := float64(s.opts.TensorParallel)
	h, d := float64(m.HiddenSize), float64(m.HeadDim)
	qkv := (float64(m.NumAttentionHeads) + 2*math.Max(float64(m.NumKVHeads), t)) * d / t
	mlp := 3 * float64(m.IntermediateSize) / t
	if m.IsMoE() {
		mlp = math.Max(mlp*float64(min(m.FirstDenseLayers, 1)),
			float64(m.ExpertsPerToken)*3*float64(m.MoEIntermediateSize)/t)
	}
	perToken := (4*h + qkv + mlp) * bf16Bytes
	logits := float64(s.opts.MaxNumSeqs) * float64(m.VocabSize) / t * fp32Bytes * 2
	r := float64(s.opts.MaxNumBatchedTokens)*perToken + logits + nonTorchReserveBytes
	if s.opts.CUDAGraphs {
		r += graphReserveBytes
	}
	return r
}

// KVBytesPerToken is the KV cache one token occupies in the full-attention
// layers of the whole replica (all ranks). Sliding-window layers hold at most
// a window per sequence, charged by KVTokensForSeq; for a model whose layers
// all slide it is the per-token cost of those layers.
func (s *System) KVBytesPerToken() float64 {
	layers := s.c.fullLayers
	if layers == 0 {
		layers = s.c.slideLayers
	}
	return layers * s.c.kvBytesPerToken * s.c.tp
}

// ErrNoKVCache is matched by every error saying that a deployment leaves
// no memory for the KV cache (vLLM's start-up failure of the same kind).
var ErrNoKVCache = errors.New("kv cache size")

// KVCacheTokens is how many tokens of full-attention KV cache fit in one
// replica at the given gpu_memory_utilization: per GPU, utilization × HBM
// minus weights minus the activation reserve, times the TP size, divided by
// KVBytesPerToken, rounded down to whole blocks. It fails when the weights and
// reserve do not fit.
func (s *System) KVCacheTokens(gpuMemoryUtilization float64) (int, error) {
	if !(gpuMemoryUtilization > 0 && gpuMemoryUtilization <= 1) {
		return 0, fmt.Errorf("%w: gpu memory utilization %g is not in (0, 1]", ErrNoKVCache, gpuMemoryUtilization)
	}
	budget := gpuMemoryUtilization * s.gpu.HBMBytes
	w, r := s.WeightBytesPerGPU(), s.ActivationReserveBytesPerGPU()
	free := budget - w - r
	if free <= 0 {
		return 0, fmt.Errorf("%w: %s weights need %.1f GiB and activations %.1f GiB per GPU, "+
			"more than %.2f × %.1f GiB on %s with tensor parallel size %d",
			ErrNoKVCache, s.model.Name, w/gib, r/gib, gpuMemoryUtilization, s.gpu.HBMBytes/gib, s.gpu.Name, s.opts.TensorParallel)
	}
	tokens := int(free * s.c.tp / s.KVBytesPerToken())
	bs := s.opts.BlockSize
	return tokens / bs * bs, nil
}

// KVCacheBlocks is KVCacheTokens in blocks of Options().BlockSize.
func (s *System) KVCacheBlocks(gpuMemoryUtilization float64) (int, error) {
	n, err := s.KVCacheTokens(gpuMemoryUtilization)
	return n / s.opts.BlockSize, err
}

// KVTokensForSeq is how many tokens of KVCacheTokens a sequence of ctx tokens
// holds: its full-attention blocks, plus its sliding-window blocks (at most
// the window and one block) scaled by the ratio of sliding to full layers, as
// vLLM's hybrid allocator shares one block pool between the layer groups.
func (s *System) KVTokensForSeq(ctx int) int {
	if ctx <= 0 {
		return 0
	}
	bs := s.opts.BlockSize
	roundUp := func(n int) int { return (n + bs - 1) / bs * bs }
	w := s.model.SlidingWindow
	if s.c.fullLayers == 0 {
		return roundUp(min(ctx, w+bs))
	}
	n := roundUp(ctx)
	if s.c.slideLayers > 0 {
		n += int(math.Ceil(float64(roundUp(min(ctx, w+bs))) * s.c.slideLayers / s.c.fullLayers))
	}
	return n
}
