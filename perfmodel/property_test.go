package perfmodel

import (
	"math/rand/v2"
	"testing"
)

// randomBatch draws a batch of decodes and an occasional prefill chunk.
func randomBatch(r *rand.Rand, maxCtx int) []Seq {
	n := 1 + r.IntN(300)
	b := make([]Seq, n)
	for i := range b {
		b[i] = Seq{NewTokens: 1, ContextTokens: r.IntN(maxCtx)}
	}
	if r.IntN(2) == 0 {
		b[0] = Seq{NewTokens: 1 + r.IntN(8192), ContextTokens: r.IntN(maxCtx)}
	}
	return b
}

// TestMoreTensorParallelNeverSlower: for gpt-oss-120b, a wider TP group never
// makes a step of at least minTPTokens tokens slower, on every catalog GPU,
// over random batches. Below that, on the fastest memories, the latency of 72
// all-reduces can outweigh the halved weight reads: TP then really is slower
// for a lone decode, and the model says so (docs/perfmodel.md).
const minTPTokens = 16

func TestMoreTensorParallelNeverSlower(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	r := rand.New(rand.NewPCG(4, 12))
	for _, gname := range GPUNames() {
		g, _ := LookupGPU(gname)
		var sys []*System
		for _, tp := range []int{1, 2, 4, 8} {
			sys = append(sys, mustSystem(t, m, g, SystemOptions{TensorParallel: tp, CUDAGraphs: true}))
		}
		for range 200 {
			b := randomBatch(r, 100000)
			if len(b) < minTPTokens && b[0].NewTokens < minTPTokens {
				continue
			}
			prev := sys[0].Step(b).Seconds
			for i, s := range sys[1:] {
				cur := s.Step(b).Seconds
				if cur > prev*(1+1e-12) {
					t.Fatalf("%s: TP %d step %.4g s > TP %d %.4g s for %d seqs", gname, s.opts.TensorParallel, cur,
						sys[i].opts.TensorParallel, prev, len(b))
				}
				prev = cur
			}
		}
	}
}

// TestMoreGPUsOrBandwidthNeverSlower: data-parallel replicas leave the step
// time unchanged, and more of any datasheet rate never raises it, for every
// catalog model and GPU.
func TestMoreGPUsOrBandwidthNeverSlower(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	boosts := []struct {
		name string
		edit func(*GPU)
	}{
		{"hbm bandwidth", func(g *GPU) { g.MemoryBandwidth *= 1.5 }},
		{"bf16", func(g *GPU) { g.BF16FLOPS *= 1.5 }},
		{"fp8", func(g *GPU) { g.FP8FLOPS *= 1.5 }},
		{"nvlink", func(g *GPU) { g.NVLinkBandwidth *= 1.5 }},
	}
	for _, mname := range ModelNames() {
		m, _ := LookupModel(mname)
		for _, gname := range GPUNames() {
			g, _ := LookupGPU(gname)
			base := mustSystem(t, m, g, SystemOptions{TensorParallel: 2})
			dp := mustSystem(t, m, g, SystemOptions{TensorParallel: 2, GPUs: 8})
			for range 20 {
				b := randomBatch(r, 30000)
				want := base.Step(b).Seconds
				if got := dp.Step(b).Seconds; got != want {
					t.Fatalf("%s on %s: 4 replicas change the step from %g to %g", mname, gname, want, got)
				}
				for _, boost := range boosts {
					g2 := g
					boost.edit(&g2)
					if got := mustSystem(t, m, g2, SystemOptions{TensorParallel: 2}).Step(b).Seconds; got > want {
						t.Fatalf("%s on %s: more %s raises the step from %g to %g", mname, gname, boost.name, want, got)
					}
				}
			}
		}
	}
}

// TestFactorsMonotone: a higher achievable fraction never slows a step, a
// larger overhead never speeds it up.
func TestFactorsMonotone(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("h100")
	r := rand.New(rand.NewPCG(1, 1))
	base := UncalibratedFactors
	s0 := mustSystem(t, m, g, SystemOptions{TensorParallel: 4, Factors: base})
	for _, name := range FactorNames() {
		f := base
		v, _ := f.Get(name)
		if IsFraction(name) {
			_ = f.Set(name, min(1, v*1.3))
		} else {
			_ = f.Set(name, v*1.3+1e-6)
		}
		s1 := mustSystem(t, m, g, SystemOptions{TensorParallel: 4, Factors: f})
		for range 20 {
			b := randomBatch(r, 50000)
			t0, t1 := s0.Step(b).Seconds, s1.Step(b).Seconds
			if IsFraction(name) && t1 > t0 || !IsFraction(name) && t1 < t0 {
				t.Fatalf("raising %s moves the step from %g to %g", name, t0, t1)
			}
		}
	}
}

// TestW4A16VersusFP4ChangesBottleneck: gpt-oss-120b on one B200 (the only
// catalog GPU with FP4 tensor cores), default factors, a large batch of the
// reference case's shape: 255 decodes at 8k context plus a 2048-token prefill
// chunk. Unpacked to BF16 (W4A16) the expert GEMMs are the bottleneck,
// compute-bound; on native FP4 tensor cores they shrink fourfold and
// attention's KV reads become the bottleneck.
func TestW4A16VersusFP4ChangesBottleneck(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("b200")
	batch := make([]Seq, 256)
	for i := range batch {
		batch[i] = Seq{NewTokens: 1, ContextTokens: 8192}
	}
	batch[0] = Seq{NewTokens: 2048, ContextTokens: 8192}
	w4 := mustSystem(t, m, g, SystemOptions{TensorParallel: 1, WeightFormat: FormatW4A16, CUDAGraphs: true}).Step(batch)
	fp4 := mustSystem(t, m, g, SystemOptions{TensorParallel: 1, WeightFormat: FormatFP4, CUDAGraphs: true}).Step(batch)
	t.Logf("W4A16: %.1f ms, %s, %+v", w4.Seconds*1e3, w4.Bottleneck(), w4.Terms)
	t.Logf("FP4:   %.1f ms, %s, %+v", fp4.Seconds*1e3, fp4.Bottleneck(), fp4.Terms)
	if w4.Bottleneck() != "moe/compute" || fp4.Bottleneck() != "attention/memory" {
		t.Errorf("bottleneck W4A16 %q, FP4 %q; want moe/compute then attention/memory", w4.Bottleneck(), fp4.Bottleneck())
	}
	if fp4.Terms.MoE >= w4.Terms.MoE/3 || fp4.Terms.Attention != w4.Terms.Attention {
		t.Errorf("FP4 should cut only the MoE term (about 4×): %+v vs %+v", fp4.Terms, w4.Terms)
	}
	// The default on B200 is native FP4, on H100 W4A16; FP4 on H100 is refused.
	if s := mustSystem(t, m, g, SystemOptions{}); s.ExpertFormat() != FormatFP4 {
		t.Errorf("B200 default expert format %v", s.ExpertFormat())
	}
	h100, _ := LookupGPU("h100")
	if s := mustSystem(t, m, h100, SystemOptions{}); s.ExpertFormat() != FormatW4A16 || s.DenseFormat() != FormatBF16 {
		t.Errorf("H100 formats %v/%v, want w4a16/bf16", s.ExpertFormat(), s.DenseFormat())
	}
	if _, err := NewSystem(m, h100, SystemOptions{WeightFormat: FormatFP4}); err == nil {
		t.Error("FP4 accepted on H100")
	}
}

// TestAttentionDominatesLongContexts: gpt-oss-120b on 4×H100, a large batch
// of the reference workload's long contexts (5k–128k) with a prefill chunk.
func TestAttentionDominatesLongContexts(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("h100")
	s := mustSystem(t, m, g, SystemOptions{TensorParallel: 4, CUDAGraphs: true})
	r := rand.New(rand.NewPCG(3, 3))
	batch := make([]Seq, 256)
	for i := range batch {
		batch[i] = Seq{NewTokens: 1, ContextTokens: 5000 + r.IntN(70000)}
	}
	batch[0] = Seq{NewTokens: 2048, ContextTokens: 20000}
	c := s.Step(batch)
	t.Logf("%.1f ms %s %+v", c.Seconds*1e3, c.Bottleneck(), c.Terms)
	if name, _ := c.Terms.Largest(); name != "attention" {
		t.Errorf("largest term %q, want attention", name)
	}
	// Short contexts at small batch: the MoE weight reads and overheads lead.
	small := s.Step([]Seq{{NewTokens: 1, ContextTokens: 1000}, {NewTokens: 1, ContextTokens: 1000}})
	if name, _ := small.Terms.Largest(); name == "attention" {
		t.Errorf("attention leads a 2-sequence decode: %+v", small.Terms)
	}
}
