package perfmodel

import "math"

// stepConstants are the per-GPU quantities Step multiplies by the batch
// shape, computed once in NewSystem (docs/perfmodel.md derives each).
type stepConstants struct {
	tp                                 float64
	layers, fullLayers, slideLayers    float64
	mlpLayers, sharedLayers, moeLayers float64

	// attention
	attnFLOPsPerPair2              float64 // FLOPs per unit of BatchShape.*Pairs2, one layer
	kvBytesPerToken                float64 // K+V bytes of one token in one layer, this rank
	attnActBytesPerToken           float64 // Q read and output written
	attnAchieved, attnPeak, attnBW float64

	// dense GEMMs
	projFLOPsPerToken, projWeightBytes, projActBytesPerToken       float64
	mlpFLOPsPerToken, mlpWeightBytes, mlpActBytesPerToken          float64
	sharedFLOPsPerToken, sharedWeightBytes, sharedActBytesPerToken float64
	routerFLOPsPerToken, routerWeightBytes, routerActBytesPerToken float64
	lmFLOPsPerSeq, lmWeightBytes, lmActBytesPerSeq                 float64
	denseAchieved, densePeak, denseBW                              float64
	lmAchieved, lmPeak                                             float64

	// MoE
	experts float64
	missLog float64 // ln(1 − k/E); −Inf when k = E
	// activeExperts[T] is experts · (1 − e^(T·missLog)), the experts a
	// step of T tokens touches, for T up to the step's token budget: taken
	// from the table instead of an Expm1 per step of a day
	activeExperts                          []float64
	expertFLOPsPerToken, expertWeightBytes float64
	expertActBytesPerToken                 float64
	moeAchieved, moePeak, moeBW            float64

	// communication
	allReducesPerStep, ringSecondsPerToken, gatherSecondsPerSeq, allReduceLatency float64

	// elementwise
	elementwiseBytesPerToken, samplingBytesPerSeq, elementwiseBW float64

	kernels float64 // kernel launches per step
}

// Constants of the kernel inventory (docs/perfmodel.md, "Other" and "Overhead").
const (
	// elementwisePassesPerLayer counts hidden-state-sized BF16 reads and writes
	// per layer outside GEMMs and attention: two RMSNorms (read+write each),
	// two residual adds (two reads, one write each), rotary on Q and K.
	elementwisePassesPerLayer = 12
	// fusedNormPassesPerLayer of them (two norms, two residual adds) move
	// into the all-reduce kernel under FusedAllReduceNorm.
	fusedNormPassesPerLayer = 10
	// samplingPasses counts FP32 passes over a sequence's logits (softmax,
	// top-k/top-p, sampling).
	samplingPasses = 3
	// kernels per layer: norm, QKV, rotary+KV write, attention, O projection,
	// norm (attention block); router, top-k, permute, expert GEMM 1,
	// activation, expert GEMM 2, unpermute (MoE block) or gate-up, activation,
	// down (dense block); plus one per all-reduce.
	attentionKernels = 6
	moeKernels       = 7
	denseMLPKernels  = 3
	stepKernels      = 8 // embedding, final norm, LM head, sampling, bookkeeping
	bf16Bytes        = 2
	fp32Bytes        = 4
)

func (s *System) precompute() {
	m, g, f := &s.model, &s.gpu, &s.factors
	t := float64(s.opts.TensorParallel)
	h := float64(m.HiddenSize)
	d := float64(m.HeadDim)
	qDim := float64(m.NumAttentionHeads) * d / t
	// vLLM replicates KV heads when TP exceeds their number.
	kvHeads := math.Max(float64(m.NumKVHeads)/t, 1)
	kvDim := kvHeads * d
	c := &s.c
	*c = stepConstants{tp: t, layers: float64(m.Layers), fullLayers: float64(m.FullLayers()),
		slideLayers: float64(m.SlidingLayers()), moeLayers: float64(m.moeLayers())}
	if m.IsMoE() {
		c.mlpLayers = float64(m.FirstDenseLayers)
		if m.SharedExpertSize > 0 {
			c.sharedLayers = c.moeLayers
		}
	} else {
		c.mlpLayers = c.layers
	}
	clk := s.clock

	// Attention: QKᵀ and PV are 2 FLOPs per multiply-add each, per head per
	// (query, key) pair: 4·d·heads per pair, 2·d·heads per unit of Pairs2.
	c.attnFLOPsPerPair2 = 2 * qDim
	c.kvBytesPerToken = 2 * kvDim * s.opts.KVCacheDtype.Bytes()
	c.attnActBytesPerToken = 2 * qDim * bf16Bytes
	c.attnPeak = g.BF16FLOPS
	c.attnAchieved = g.BF16FLOPS * f.AttentionCompute * clk
	c.attnBW = g.MemoryBandwidth * f.AttentionMemory

	dw := s.denseFormat.BytesPerWeight()
	c.densePeak = s.peak(s.denseFormat)
	c.denseAchieved = c.densePeak * f.DenseCompute * clk
	c.denseBW = g.MemoryBandwidth * f.DenseMemory
	c.lmPeak = g.BF16FLOPS
	c.lmAchieved = g.BF16FLOPS * f.DenseCompute * clk

	proj := (h*(qDim+2*kvDim) + qDim*h) // this rank's Q, K, V, O weights
	c.projFLOPsPerToken = 2 * proj
	c.projWeightBytes = proj * dw
	c.projActBytesPerToken = (2*h + qDim + 2*kvDim + qDim) * bf16Bytes

	mlp := 3 * h * float64(m.IntermediateSize) / t
	c.mlpFLOPsPerToken = 2 * mlp
	c.mlpWeightBytes = mlp * dw
	c.mlpActBytesPerToken = (2*h + 3*float64(m.IntermediateSize)/t) * bf16Bytes

	shared := 3 * h * float64(m.SharedExpertSize) / t
	c.sharedFLOPsPerToken = 2 * shared
	c.sharedWeightBytes = shared * dw
	c.sharedActBytesPerToken = (2*h + 3*float64(m.SharedExpertSize)/t) * bf16Bytes

	e := float64(m.NumExperts)
	c.routerFLOPsPerToken = 2 * h * e // replicated on every rank
	c.routerWeightBytes = h * e * bf16Bytes
	c.routerActBytesPerToken = (h + e) * bf16Bytes

	v := float64(m.VocabSize)
	c.lmFLOPsPerSeq = 2 * v / t * h
	c.lmWeightBytes = v / t * h * bf16Bytes
	c.lmActBytesPerSeq = h*bf16Bytes + v/t*fp32Bytes

	if m.IsMoE() {
		k := float64(m.ExpertsPerToken)
		ie := float64(m.MoEIntermediateSize) / t
		c.experts = e
		c.missLog = math.Inf(-1)
		if k < e {
			c.missLog = math.Log1p(-k / e)
			c.activeExperts = make([]float64, min(s.opts.MaxNumBatchedTokens, 1<<16)+1)
			for n := range c.activeExperts {
				c.activeExperts[n] = c.experts * -math.Expm1(float64(n)*c.missLog)
			}
		}
		c.expertFLOPsPerToken = 2 * k * 3 * h * ie
		c.expertWeightBytes = 3 * h * ie * s.expertFormat.BytesPerWeight()
		c.expertActBytesPerToken = k * (2*h + 3*ie) * bf16Bytes
		mc, mm := s.moeFractions()
		c.moePeak = s.moePeak()
		c.moeAchieved = c.moePeak * mc * clk
		c.moeBW = g.MemoryBandwidth * mm
	}

	if s.opts.TensorParallel > 1 {
		c.allReducesPerStep = 2 * c.layers
		nv := g.NVLinkBandwidth * f.Network
		if nv <= 0 {
			nv = 25e9 * f.Network // no NVLink: PCIe Gen5 x16, one direction
		}
		c.ringSecondsPerToken = 2 * (t - 1) / t * h * bf16Bytes / nv
		c.gatherSecondsPerSeq = (t - 1) / t * v * fp32Bytes / nv
		c.allReduceLatency = f.AllReduceLatencySeconds
	}

	passes, normKernels := float64(elementwisePassesPerLayer), 0.0
	if s.opts.FusedAllReduceNorm && s.opts.TensorParallel > 1 {
		// Both norms and residual adds of a layer ride in its two all-reduces.
		passes, normKernels = elementwisePassesPerLayer-fusedNormPassesPerLayer, 2
	}
	c.elementwiseBytesPerToken = (c.layers*passes + 2) * h * bf16Bytes
	c.samplingBytesPerSeq = samplingPasses * v * fp32Bytes
	c.elementwiseBW = g.MemoryBandwidth * f.ElementwiseMemory

	kernels := c.layers*(attentionKernels-normKernels) + c.moeLayers*moeKernels + c.mlpLayers*denseMLPKernels + stepKernels
	if s.opts.TensorParallel > 1 {
		kernels += c.allReducesPerStep + 1
	}
	c.kernels = kernels
}
