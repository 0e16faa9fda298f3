package perfmodel

import "math"

// Seq is one sequence's share of an engine step.
type Seq struct {
	// NewTokens is how many tokens of the sequence this step computes: 1 for a
	// decode, the chunk length for a (chunked) prefill.
	NewTokens int
	// ContextTokens is how many of its tokens are already in the KV cache
	// before this step.
	ContextTokens int
}

// BatchShape is everything about a batch that its cost depends on. Callers
// that track batches incrementally (a simulator) may maintain it themselves
// and call StepShape; Shape computes it from a batch.
type BatchShape struct {
	Seqs   int // sequences in the batch (each produces logits)
	Tokens int // Σ NewTokens
	// FullPairs2 is twice the number of (query, key) pairs one head of a
	// full-attention layer computes: Σ n·(2c + n + 1) with causal masking.
	FullPairs2 int
	// SlidePairs2 is the same for a sliding-window layer, where a query sees
	// at most Window keys.
	SlidePairs2 int
	// FullKVRead and SlideKVRead are the tokens whose K and V an attention
	// layer reads: Σ (c + n), and Σ min(c + n, Window + n) when sliding.
	FullKVRead  int
	SlideKVRead int
}

// Add accumulates one sequence into the shape for a window of w tokens
// (Model.SlidingWindow; 0 when no layer slides).
func (b *BatchShape) Add(q Seq, w int) {
	n, c := q.NewTokens, q.ContextTokens
	if n <= 0 {
		return
	}
	b.Seqs++
	b.Tokens += n
	b.FullPairs2 += n * (2*c + n + 1)
	b.FullKVRead += c + n
	if w <= 0 {
		return
	}
	switch {
	case c >= w: // every new token sees a full window
		b.SlidePairs2 += 2 * n * w
		b.SlideKVRead += w + n
	case c+n <= w:
		b.SlidePairs2 += n * (2*c + n + 1)
		b.SlideKVRead += c + n
	default: // the first w-c tokens see c+j keys, the rest a full window
		m := w - c
		b.SlidePairs2 += m*(2*c+m+1) + 2*(n-m)*w
		b.SlideKVRead += c + n
	}
}

// Shape summarises a batch. Sequences with no new tokens are ignored. It is
// BatchShape.Add over the batch, with the sums kept in locals (this loop is
// most of Step's cost).
func (s *System) Shape(batch []Seq) BatchShape {
	w := s.model.SlidingWindow
	var seqs, tokens, full2, fullKV, slide2, slideKV int
	for i := range batch {
		n, c := batch[i].NewTokens, batch[i].ContextTokens
		if n <= 0 {
			continue
		}
		seqs++
		tokens += n
		full2 += n * (2*c + n + 1)
		fullKV += c + n
		switch {
		case w <= 0:
		case c >= w:
			slide2 += 2 * n * w
			slideKV += w + n
		case c+n <= w:
			slide2 += n * (2*c + n + 1)
			slideKV += c + n
		default:
			m := w - c
			slide2 += m*(2*c+m+1) + 2*(n-m)*w
			slideKV += c + n
		}
	}
	return BatchShape{Seqs: seqs, Tokens: tokens, FullPairs2: full2, SlidePairs2: slide2, FullKVRead: fullKV, SlideKVRead: slideKV}
}

// Terms splits a step's time (seconds) by kernel family.
type Terms struct {
	Attention     float64 `json:"attention"`     // attention kernels, all layers
	DenseGEMM     float64 `json:"dense_gemm"`    // Q/K/V/O projections, dense MLPs, router, LM head
	MoE           float64 `json:"moe"`           // routed expert GEMMs
	Communication float64 `json:"communication"` // tensor-parallel collectives
	Overhead      float64 `json:"overhead"`      // per-step CPU time and kernel launch gaps
	Other         float64 `json:"other"`         // norms, residuals, rotary, sampling
}

// Sum is the step time the terms add up to.
func (t Terms) Sum() float64 {
	return t.Attention + t.DenseGEMM + t.MoE + t.Communication + t.Overhead + t.Other
}

// ScaleGPU multiplies the GPU's terms (every kernel family) by k and leaves
// Overhead, the engine's CPU time and launch gaps, as it is: a slower or
// faster GPU, or a fitted correction of its kernels.
func (t *Terms) ScaleGPU(k float64) {
	t.Attention *= k
	t.DenseGEMM *= k
	t.MoE *= k
	t.Communication *= k
	t.Other *= k
}

// Plus returns t + o term by term (summing the costs of several steps).
func (t Terms) Plus(o Terms) Terms {
	return Terms{Attention: t.Attention + o.Attention, DenseGEMM: t.DenseGEMM + o.DenseGEMM, MoE: t.MoE + o.MoE,
		Communication: t.Communication + o.Communication, Overhead: t.Overhead + o.Overhead, Other: t.Other + o.Other}
}

// Scaled returns every term multiplied by f.
func (t Terms) Scaled(f float64) Terms {
	return Terms{Attention: t.Attention * f, DenseGEMM: t.DenseGEMM * f, MoE: t.MoE * f,
		Communication: t.Communication * f, Overhead: t.Overhead * f, Other: t.Other * f}
}

// Largest names the largest term ("attention", "dense_gemm", "moe",
// "communication", "overhead", "other") and returns its seconds.
func (t Terms) Largest() (string, float64) {
	name, v := "attention", t.Attention
	for _, c := range []struct {
		n string
		v float64
	}{{"dense_gemm", t.DenseGEMM}, {"moe", t.MoE}, {"communication", t.Communication}, {"overhead", t.Overhead}, {"other", t.Other}} {
		if c.v > v {
			name, v = c.n, c.v
		}
	}
	return name, v
}

// Bound says which roofline limits a kernel family.
type Bound uint8

// Roofline limits.
const (
	NoWork Bound = iota
	ComputeBound
	MemoryBound
)

// String returns "compute", "memory" or "none".
func (b Bound) String() string {
	switch b {
	case ComputeBound:
		return "compute"
	case MemoryBound:
		return "memory"
	}
	return "none"
}

// Bounds tells, per kernel family, whether its compute time or its memory time
// was the larger.
type Bounds struct {
	Attention, DenseGEMM, MoE Bound
}

// StepCost is the predicted cost of one engine step of one replica.
type StepCost struct {
	Seconds float64
	Terms   Terms
	Bounds  Bounds
	// FLOPs and HBMBytes are per GPU (each tensor-parallel rank does the same).
	FLOPs    float64
	HBMBytes float64
	// CUDAGraph is true when the step replays a captured graph.
	CUDAGraph bool
	// KernelActive estimates DCGM_FI_DEV_GPU_UTIL over the step: the
	// fraction of it during which at least one kernel executes (everything
	// but the engine's CPU time, StepOverheadSeconds and
	// PerSeqOverheadSeconds, during which the GPU waits when scheduling is
	// synchronous).
	KernelActive float64
	// SMActive, TensorActive and DRAMActive estimate the DCGM profiling
	// counters (fractions of the step) on each GPU; PowerWatts its mean power.
	// SMActive is DCGM_FI_PROF_SM_ACTIVE: the fraction of time an SM has at
	// least one warp resident, averaged over the SMs — a kernel that runs
	// on few SMs counts for that share of the GPU only (docs/perfmodel.md
	// §3.8).
	SMActive     float64
	TensorActive float64
	DRAMActive   float64
	PowerWatts   float64
}

// Bottleneck returns the largest term's name with its bound when it has one,
// e.g. "moe/compute" or "attention/memory".
func (c StepCost) Bottleneck() string {
	name, _ := c.Terms.Largest()
	var b Bound
	switch name {
	case "attention":
		b = c.Bounds.Attention
	case "dense_gemm":
		b = c.Bounds.DenseGEMM
	case "moe":
		b = c.Bounds.MoE
	default:
		return name
	}
	return name + "/" + b.String()
}

// Step prices one engine step over the batch. It allocates nothing.
func (s *System) Step(batch []Seq) StepCost {
	return s.StepShape(s.Shape(batch))
}

// roofline accumulates one kernel family's time, work and tensor-busy time.
type roofline struct {
	seconds, computeSeconds, memorySeconds float64
	flops, bytes, tensorSeconds            float64
}

// add prices `count` identical kernels of f FLOPs and b bytes each.
func (r *roofline) add(count, f, b, achievedFLOPS, peakFLOPS, achievedBW float64) {
	ct, mt := f/achievedFLOPS, b/achievedBW
	longer := mt
	if ct > mt {
		longer = ct
	}
	r.seconds += count * longer
	r.computeSeconds += count * ct
	r.memorySeconds += count * mt
	r.flops += count * f
	r.bytes += count * b
	r.tensorSeconds += count * f / peakFLOPS
}

func (r *roofline) bound() Bound {
	switch {
	case r.seconds == 0:
		return NoWork
	case r.computeSeconds >= r.memorySeconds:
		return ComputeBound
	}
	return MemoryBound
}

// StepShape prices one engine step of a batch with the given shape.
func (s *System) StepShape(b BatchShape) StepCost {
	var cost StepCost
	if b.Tokens <= 0 {
		return cost
	}
	c := &s.c
	T, N := float64(b.Tokens), float64(b.Seqs)

	// Attention: one kernel per layer over the whole mixed batch.
	var att roofline
	if c.fullLayers > 0 {
		att.add(c.fullLayers, c.attnFLOPsPerPair2*float64(b.FullPairs2),
			c.kvBytesPerToken*float64(b.FullKVRead+b.Tokens)+c.attnActBytesPerToken*T,
			c.attnAchieved, c.attnPeak, c.attnBW)
	}
	if c.slideLayers > 0 {
		att.add(c.slideLayers, c.attnFLOPsPerPair2*float64(b.SlidePairs2),
			c.kvBytesPerToken*float64(b.SlideKVRead+b.Tokens)+c.attnActBytesPerToken*T,
			c.attnAchieved, c.attnPeak, c.attnBW)
	}

	// Dense GEMMs.
	var dense roofline
	dense.add(c.layers, c.projFLOPsPerToken*T, c.projWeightBytes+c.projActBytesPerToken*T,
		c.denseAchieved, c.densePeak, c.denseBW)
	if c.mlpLayers > 0 {
		dense.add(c.mlpLayers, c.mlpFLOPsPerToken*T, c.mlpWeightBytes+c.mlpActBytesPerToken*T,
			c.denseAchieved, c.densePeak, c.denseBW)
	}
	if c.sharedLayers > 0 {
		dense.add(c.sharedLayers, c.sharedFLOPsPerToken*T, c.sharedWeightBytes+c.sharedActBytesPerToken*T,
			c.denseAchieved, c.densePeak, c.denseBW)
	}
	if c.moeLayers > 0 {
		dense.add(c.moeLayers, c.routerFLOPsPerToken*T, c.routerWeightBytes+c.routerActBytesPerToken*T,
			c.lmAchieved, c.lmPeak, c.denseBW)
	}
	dense.add(1, c.lmFLOPsPerSeq*N, c.lmWeightBytes+c.lmActBytesPerSeq*N, c.lmAchieved, c.lmPeak, c.denseBW)

	// MoE experts: weights of the distinct experts the step touches, math for
	// T·k expert passes.
	var moe roofline
	if c.moeLayers > 0 {
		active := c.experts
		switch {
		case b.Tokens < len(c.activeExperts):
			active = c.activeExperts[b.Tokens]
		case c.missLog > math.Inf(-1):
			active = c.experts * -math.Expm1(T*c.missLog)
		}
		moe.add(c.moeLayers, c.expertFLOPsPerToken*T,
			active*c.expertWeightBytes+c.expertActBytesPerToken*T,
			c.moeAchieved, c.moePeak, c.moeBW)
	}

	// Tensor-parallel collectives: two all-reduces of the hidden state per
	// layer and one gather of the logits.
	var comm float64
	if c.tp > 1 {
		comm = c.allReducesPerStep*(c.ringSecondsPerToken*T+c.allReduceLatency) +
			c.gatherSecondsPerSeq*N + c.allReduceLatency
	}

	// Elementwise kernels and sampling: memory traffic only.
	otherBytes := c.elementwiseBytesPerToken*T + c.samplingBytesPerSeq*N
	other := otherBytes / c.elementwiseBW

	graph := s.opts.CUDAGraphs && b.Tokens <= s.opts.CUDAGraphMaxTokens
	perKernel := s.factors.EagerKernelSeconds
	if graph {
		perKernel = s.factors.GraphKernelSeconds
	}
	overhead := s.factors.StepOverheadSeconds + s.factors.PerSeqOverheadSeconds*N + c.kernels*perKernel

	cost.Terms = Terms{Attention: att.seconds, DenseGEMM: dense.seconds, MoE: moe.seconds,
		Communication: comm, Overhead: overhead, Other: other}
	cost.Bounds = Bounds{Attention: att.bound(), DenseGEMM: dense.bound(), MoE: moe.bound()}
	cost.Seconds = cost.Terms.Sum()
	cost.FLOPs = att.flops + dense.flops + moe.flops
	cost.HBMBytes = att.bytes + dense.bytes + moe.bytes + otherBytes
	cost.CUDAGraph = graph

	// GEMM, attention and MoE kernels spread their work over every SM
	// (tiles, split-K/split-KV, Marlin's striped partitioning); the small
	// kernels (norms, rotary, activation, top-k, sampling) and the tails
	// the per-kernel cost stands for run one thread block per token or
	// sequence, so with fewer tokens than SMs only that many SMs hold a
	// warp; a collective keeps commSMShare of them busy.
	cpu := s.factors.StepOverheadSeconds + s.factors.PerSeqOverheadSeconds*N
	small := min(1, T/s.sms)
	cost.KernelActive = min(1, max(0, cost.Seconds-cpu)/cost.Seconds)
	busy := att.seconds + dense.seconds + moe.seconds + commSMShare*comm + small*(other+max(0, overhead-cpu))
	cost.SMActive = min(1, busy/cost.Seconds)
	cost.TensorActive = min(1, (att.tensorSeconds+dense.tensorSeconds+moe.tensorSeconds)/s.clock/cost.Seconds)
	cost.DRAMActive = min(1, cost.HBMBytes/s.gpu.MemoryBandwidth/cost.Seconds)
	load := powerSMWeight*cost.SMActive + powerTensorWeight*cost.TensorActive + powerDRAMWeight*cost.DRAMActive
	cost.PowerWatts = s.gpu.TDPWatts * (idlePowerFraction + (1-idlePowerFraction)*min(1, load)) * (0.5 + 0.5*s.clock)
	return cost
}

// Heuristics for the telemetry estimates (docs/perfmodel.md, "Utilisation").
const (
	commSMShare       = 0.25 // share of SMs a collective keeps busy
	idlePowerFraction = 0.10 // idle draw as a fraction of TDP
	powerSMWeight     = 0.30
	powerTensorWeight = 0.45
	powerDRAMWeight   = 0.25
)
