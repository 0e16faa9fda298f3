package perfmodel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// toyModel is small enough to price by hand: 2 layers (full, then sliding
// with a 4-token window), hidden 8, 2 query heads and 1 KV head of dim 4,
// SwiGLU MLP of width 16, vocabulary 10.
func toyModel() Model {
	return Model{Name: "toy", Layers: 2, HiddenSize: 8, NumAttentionHeads: 2, NumKVHeads: 1, HeadDim: 4,
		IntermediateSize: 16, SlidingWindow: 4, LayerTypes: []AttentionKind{FullAttention, SlidingAttention},
		VocabSize: 10, MaxContext: 64}
}

// toyGPU does 1 GFLOP/s and moves 1 GB/s so that seconds read as counts × 1e-9.
func toyGPU() GPU {
	return GPU{Name: "toy", HBMBytes: 1 * gib, MemoryBandwidth: 1e9, BF16FLOPS: 1e9, FP8FLOPS: 2e9,
		NVLinkBandwidth: 1e9, SMCount: 1, TDPWatts: 100}
}

func toyFactors() Factors {
	return Factors{DenseCompute: 1, DenseMemory: 1, AttentionCompute: 1, AttentionMemory: 1,
		MoECompute: 1, MoEMemory: 1, MoEFP8Compute: 1, MoEFP8Memory: 1, ElementwiseMemory: 1, Network: 1,
		StepOverheadSeconds: 1e-6, PerSeqOverheadSeconds: 1e-7, GraphKernelSeconds: 0,
		EagerKernelSeconds: 1e-8, AllReduceLatencySeconds: 1e-6}
}

func mustSystem(t testing.TB, m Model, g GPU, o SystemOptions) *System {
	t.Helper()
	s, err := NewSystem(m, g, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkClose(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("%s = %.6g, want %.6g", what, got, want)
	}
}

// TestShapeByHand: a 3-token chunk after 2 cached tokens and a decode after 5.
func TestShapeByHand(t *testing.T) {
	s := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors()})
	b := s.Shape([]Seq{{NewTokens: 3, ContextTokens: 2}, {NewTokens: 1, ContextTokens: 5}, {NewTokens: 0, ContextTokens: 9}})
	// Full: queries see 3,4,5 and 6 keys → 18 pairs. Sliding (window 4):
	// 3,4,4 and 4 → 15 pairs. KV read: 5+6 full, 5 + (4+1) sliding.
	want := BatchShape{Seqs: 2, Tokens: 4, FullPairs2: 36, SlidePairs2: 30, FullKVRead: 11, SlideKVRead: 10}
	if b != want {
		t.Errorf("shape %+v, want %+v", b, want)
	}
}

func TestStepByHand(t *testing.T) {
	s := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors()})
	c := s.Step([]Seq{{NewTokens: 3, ContextTokens: 2}, {NewTokens: 1, ContextTokens: 5}})
	// Attention, full layer: 4·heads·d = 32 FLOPs per pair × 18 = 576 FLOPs;
	// bytes = 16 B of K+V per token × (11 read + 4 written) + Q and output
	// 2·8·2 B × 4 tokens = 368 → compute-bound, 576 ns. Sliding: 32 × 15 =
	// 480 FLOPs vs 16 × 14 + 128 = 352 B → 480 ns.
	checkClose(t, "attention", c.Terms.Attention, 1056e-9)
	// Projections: 8·(8+2·4) + 8·8 = 192 weights → 2·192·4 = 1536 FLOPs vs
	// 384 + 4·(16+8+8+8)·2 = 704 B → 1536 ns per layer. MLP: 3·8·16 = 384
	// weights → 3072 FLOPs vs 768 + 4·(16+48)·2 = 1280 B → 3072 ns per layer.
	// LM head: 2·10·8 FLOPs × 2 sequences = 320 vs 160 + 2·(16+40) = 272 B.
	checkClose(t, "dense", c.Terms.DenseGEMM, 2*1536e-9+2*3072e-9+320e-9)
	checkClose(t, "moe", c.Terms.MoE, 0)
	checkClose(t, "communication", c.Terms.Communication, 0)
	// Elementwise: (2 layers × 12 + 2) passes × 8 × 2 B × 4 tokens = 1664 B,
	// sampling 3 passes × 10 × 4 B × 2 sequences = 240 B.
	checkClose(t, "other", c.Terms.Other, 1904e-9)
	// 1 µs + 2 × 0.1 µs + 26 eager kernels × 10 ns.
	checkClose(t, "overhead", c.Terms.Overhead, 1e-6+2e-7+26e-8)
	checkClose(t, "seconds", c.Seconds, 1056e-9+9536e-9+1904e-9+1460e-9)
	checkClose(t, "flops", c.FLOPs, 576+480+2*1536+2*3072+320)
	checkClose(t, "bytes", c.HBMBytes, 368+352+2*704+2*1280+272+1904)
	if c.Bounds.Attention != ComputeBound || c.Bounds.DenseGEMM != ComputeBound || c.Bounds.MoE != NoWork {
		t.Errorf("bounds %+v", c.Bounds)
	}
	if c.CUDAGraph {
		t.Error("eager system reported a CUDA graph step")
	}
	if c.Bottleneck() != "dense_gemm/compute" {
		t.Errorf("bottleneck %q", c.Bottleneck())
	}
	if c.SMActive <= 0 || c.SMActive > 1 || c.TensorActive <= 0 || c.TensorActive > 1 || c.DRAMActive <= 0 || c.DRAMActive > 1 {
		t.Errorf("utilisation out of (0,1]: %+v", c)
	}
	// Tensor pipes busy for the FLOPs at peak over the step.
	checkClose(t, "tensor active", c.TensorActive, c.FLOPs/1e9/c.Seconds)
	checkClose(t, "dram active", c.DRAMActive, c.HBMBytes/1e9/c.Seconds)
}

func TestStepFactorsScaleTheirTerm(t *testing.T) {
	f := toyFactors()
	f.AttentionCompute = 0.5 // full and sliding layers are compute-bound: attention doubles
	s := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: f})
	c := s.Step([]Seq{{NewTokens: 3, ContextTokens: 2}, {NewTokens: 1, ContextTokens: 5}})
	checkClose(t, "attention at half compute", c.Terms.Attention, 2*1056e-9)
	checkClose(t, "dense unchanged", c.Terms.DenseGEMM, 9536e-9)
	// A throttled rank at half clock halves every compute rate.
	s = mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors(), TensorParallel: 2, ClockFactors: []float64{1, 0.5}})
	full := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors(), TensorParallel: 2})
	b := []Seq{{NewTokens: 3, ContextTokens: 2}}
	slow, fast := s.Step(b), full.Step(b)
	if slow.Terms.DenseGEMM <= fast.Terms.DenseGEMM || slow.Terms.Overhead != fast.Terms.Overhead {
		t.Errorf("throttled %+v vs %+v", slow.Terms, fast.Terms)
	}
}

func TestStepCommunicationByHand(t *testing.T) {
	s := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors(), TensorParallel: 2})
	c := s.Step([]Seq{{NewTokens: 3, ContextTokens: 2}, {NewTokens: 1, ContextTokens: 5}})
	// 2 all-reduces per layer × 2 layers, each 2·(2−1)/2 × 4 tokens × 8 × 2 B
	// = 64 B at 1 GB/s plus 1 µs; logits gather (1/2) × 10 × 4 B × 2 = 40 B
	// plus 1 µs.
	checkClose(t, "communication", c.Terms.Communication, 4*(64e-9+1e-6)+40e-9+1e-6)
}

func toyMoE() Model {
	m := toyModel()
	m.IntermediateSize = 0
	m.NumExperts, m.ExpertsPerToken, m.MoEIntermediateSize = 4, 2, 4
	return m
}

func TestStepMoEByHand(t *testing.T) {
	f := toyFactors()
	f.MoEMemory = 0.5
	b := []Seq{{NewTokens: 3}}
	// 3 tokens, top-2 of 4: expected distinct experts 4·(1 − (1 − 2/4)³) = 3.5.
	// Expert = 3·8·4 = 96 weights. FLOPs 2 × 3 tokens × 2 experts × 96 = 1152.
	// Activations 3 × 2 × (2·8 + 3·4) × 2 B = 336 B.
	tests := []struct {
		format      WeightFormat
		weightBytes float64
		bound       Bound
	}{
		{FormatBF16, 3.5 * 96 * 2, MemoryBound},          // 1008 B at 0.5 GB/s > 1152 FLOPs at 1 GFLOP/s
		{FormatW4A16, 3.5 * 96 * 4.25 / 8, ComputeBound}, // 514.5 B at 0.5 GB/s < 1152 ns
	}
	for _, tc := range tests {
		s := mustSystem(t, toyMoE(), toyGPU(), SystemOptions{Factors: f, WeightFormat: tc.format})
		c := s.Step(b)
		perLayer := math.Max(1152e-9, (tc.weightBytes+336)/0.5e9)
		checkClose(t, "moe "+tc.format.String(), c.Terms.MoE, 2*perLayer)
		if c.Bounds.MoE != tc.bound {
			t.Errorf("%v: MoE bound %v, want %v", tc.format, c.Bounds.MoE, tc.bound)
		}
	}
	// FP8 multiplies at the FP8 peak (2 GFLOP/s) from 1-byte weights.
	f.MoEMemory = 1
	s := mustSystem(t, toyMoE(), toyGPU(), SystemOptions{Factors: f, WeightFormat: FormatFP8})
	c := s.Step([]Seq{{NewTokens: 300}})
	active := 4 * (1 - math.Pow(0.5, 300))
	perLayer := math.Max(2*300*2*96/2e9, (active*96+300*2*28*2)/1e9)
	checkClose(t, "moe fp8", c.Terms.MoE, 2*perLayer)
}

func TestStepEmptyAndGraphs(t *testing.T) {
	s := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors(), CUDAGraphs: true, CUDAGraphMaxTokens: 4})
	if c := s.Step(nil); c.Seconds != 0 {
		t.Errorf("empty step costs %g", c.Seconds)
	}
	small := s.Step([]Seq{{NewTokens: 4}})
	big := s.Step([]Seq{{NewTokens: 5}})
	if !small.CUDAGraph || big.CUDAGraph {
		t.Errorf("graph replay: 4 tokens %v, 5 tokens %v", small.CUDAGraph, big.CUDAGraph)
	}
	// Graph kernels cost 0 in toyFactors, eager ones 10 ns each.
	checkClose(t, "graph overhead", small.Terms.Overhead, 1e-6+1e-7)
	checkClose(t, "eager overhead", big.Terms.Overhead, 1e-6+1e-7+26e-8)
}

func TestStepAllocatesNothing(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("h100")
	s := mustSystem(t, m, g, SystemOptions{TensorParallel: 4})
	batch := make([]Seq, 256)
	for i := range batch {
		batch[i] = Seq{NewTokens: 1, ContextTokens: 1000 * i}
	}
	if n := testing.AllocsPerRun(100, func() { s.Step(batch) }); n != 0 {
		t.Errorf("Step allocates %g times", n)
	}
}

// TestShapeMatchesAdd: the unrolled Shape equals BatchShape.Add over random batches.
func TestShapeMatchesAdd(t *testing.T) {
	s := mustSystem(t, toyModel(), toyGPU(), SystemOptions{Factors: toyFactors()})
	r := rand.New(rand.NewPCG(9, 9))
	for range 1000 {
		batch := make([]Seq, r.IntN(20))
		var want BatchShape
		for i := range batch {
			batch[i] = Seq{NewTokens: r.IntN(12) - 1, ContextTokens: r.IntN(12)}
			want.Add(batch[i], 4)
		}
		if got := s.Shape(batch); got != want {
			t.Fatalf("batch %v: Shape %+v, Add %+v", batch, got, want)
		}
	}
}
