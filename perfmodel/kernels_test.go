package perfmodel

import (
	"math"
	"testing"
)

// toyMXFP4 is toyMoE with MXFP4 experts, so both MoE kernels apply.
func toyMXFP4() Model {
	m := toyMoE()
	m.Quantization = Quantization{Method: "mxfp4", Format: FormatFP4, ExpertsOnly: true}
	return m
}

// TestMoEKernelClass: the MoE kernel decides the class whose fractions price
// the experts and the peak they multiply at; 4.25-bit weights either way.
func TestMoEKernelClass(t *testing.T) {
	g := toyGPU() // BF16 1 GFLOP/s, FP8 2 GFLOP/s, no FP4
	f := toyFactors()
	f.MoECompute, f.MoEFP8Compute = 0.5, 0.25
	b := []Seq{{NewTokens: 300}}
	active := 4 * (1 - math.Pow(0.5, 300))
	bytes := active*96*4.25/8 + 300*2*28*2
	flops := 2 * 300 * 2 * 96.0
	for _, tc := range []struct {
		kernel MoEKernel
		class  string
		rate   float64 // achieved FLOP/s
	}{
		{MoEKernelAuto, "bf16", 0.5e9}, // no FP4 on this GPU: W4A16
		{MoEKernelW4A16, "bf16", 0.5e9},
		{MoEKernelMXFP4xMXFP8, "fp8", 0.25 * 2e9},
	} {
		s := mustSystem(t, toyMXFP4(), g, SystemOptions{Factors: f, MoEKernel: tc.kernel})
		if got := s.MoEClass(); got != tc.class {
			t.Errorf("%v: class %s, want %s", tc.kernel, got, tc.class)
		}
		c := s.Step(b)
		checkClose(t, "moe "+tc.kernel.String(), c.Terms.MoE, 2*math.Max(flops/tc.rate, bytes/1e9))
	}
	// The FP8-rate kernel needs FP8 tensor cores and MXFP4 weights.
	noFP8 := g
	noFP8.FP8FLOPS = 0
	if _, err := NewSystem(toyMXFP4(), noFP8, SystemOptions{Factors: f, MoEKernel: MoEKernelMXFP4xMXFP8}); err == nil {
		t.Error("mxfp4-mxfp8 on a GPU without FP8: no error")
	}
	if _, err := NewSystem(toyMoE(), g, SystemOptions{Factors: f, MoEKernel: MoEKernelMXFP4xMXFP8}); err == nil {
		t.Error("mxfp4-mxfp8 on BF16 experts: no error")
	}
}

// TestFusedAllReduceNorm: the fused pass removes two norm kernels per layer
// and ten of the twelve elementwise passes, and only with TP > 1.
func TestFusedAllReduceNorm(t *testing.T) {
	m := toyModel()
	m.NumKVHeads = 2
	f := toyFactors()
	f.GraphKernelSeconds, f.EagerKernelSeconds = 1e-6, 1e-6
	b := []Seq{{NewTokens: 4, ContextTokens: 8}}
	plain := mustSystem(t, m, toyGPU(), SystemOptions{TensorParallel: 2, Factors: f}).Step(b)
	fused := mustSystem(t, m, toyGPU(), SystemOptions{TensorParallel: 2, Factors: f, FusedAllReduceNorm: true}).Step(b)
	checkClose(t, "overhead saved", plain.Terms.Overhead-fused.Terms.Overhead, 2*2*1e-6)
	// elementwise bytes: (layers·passes + 2)·T·h·2 B
	checkClose(t, "elementwise saved", plain.Terms.Other-fused.Terms.Other, 2*10*4*8*2/1e9)
	one := mustSystem(t, m, toyGPU(), SystemOptions{Factors: f}).Step(b)
	oneFused := mustSystem(t, m, toyGPU(), SystemOptions{Factors: f, FusedAllReduceNorm: true}).Step(b)
	if one != oneFused {
		t.Error("fused all-reduce changed a TP=1 step, which has no all-reduce")
	}
}

func TestParseMoEKernel(t *testing.T) {
	for in, want := range map[string]MoEKernel{"": MoEKernelAuto, "Marlin": MoEKernelW4A16, "triton": MoEKernelW4A16,
		"flashinfer-mxfp8": MoEKernelMXFP4xMXFP8, "mxfp4-mxfp8": MoEKernelMXFP4xMXFP8} {
		if got, err := ParseMoEKernel(in); err != nil || got != want {
			t.Errorf("ParseMoEKernel(%q) = %v, %v", in, got, err)
		}
		if got, _ := ParseMoEKernel(want.String()); got != want {
			t.Errorf("%v does not round-trip", want)
		}
	}
	if _, err := ParseMoEKernel("cutlass"); err == nil {
		t.Error("unknown kernel accepted")
	}
}

// TestUtilisationSemantics: KernelActive (GPU_UTIL) excludes only the CPU
// overhead; SMActive (SM_ACTIVE) also counts small kernels only for the SMs
// their one-block-per-token grids occupy, so it falls with fewer tokens than
// SMs and never exceeds KernelActive.
func TestUtilisationSemantics(t *testing.T) {
	g := toyGPU()
	g.SMCount = 8
	f := toyFactors()
	f.GraphKernelSeconds, f.EagerKernelSeconds = 1e-6, 1e-6
	s := mustSystem(t, toyModel(), g, SystemOptions{Factors: f})
	for _, n := range []int{2, 8, 32} {
		c := s.Step([]Seq{{NewTokens: n}})
		cpu := f.StepOverheadSeconds + f.PerSeqOverheadSeconds
		checkClose(t, "kernel active", c.KernelActive, (c.Seconds-cpu)/c.Seconds)
		small := math.Min(1, float64(n)/8)
		want := (c.Terms.Attention + c.Terms.DenseGEMM + c.Terms.MoE + small*(c.Terms.Other+c.Terms.Overhead-cpu)) / c.Seconds
		checkClose(t, "sm active", c.SMActive, want)
		if c.SMActive > c.KernelActive+1e-12 {
			t.Errorf("%d tokens: SM active %g above kernel active %g", n, c.SMActive, c.KernelActive)
		}
	}
}
