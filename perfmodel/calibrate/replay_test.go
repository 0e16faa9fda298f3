package calibrate

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

// onePoint is a single user sending two 100-token prompts for 5 tokens each.
func onePoint() Point {
	return Point{Source: "hand", Model: DefaultModel, GPU: "h100", TensorParallel: 2, GPUs: 2,
		InputLen: 100, OutputLen: 5, RangeRatio: 1, NumPrompts: 2, Concurrency: 1,
		Measured: Metrics{OutputThroughputPerGPU: 1, MedianTPOTSeconds: 1, MedianTTFTSeconds: 1}}
}

// asyncStep is a step under async scheduling: the CPU overhead
// (StepOverheadSeconds + PerSeqOverheadSeconds per sequence) is hidden.
func asyncStep(sys *perfmodel.System, batch []perfmodel.Seq) float64 {
	c := sys.Step(batch)
	f := sys.Factors()
	return c.Seconds - math.Min(c.Terms.Overhead, f.StepOverheadSeconds+f.PerSeqOverheadSeconds*float64(len(batch)))
}

// TestReplayByHand follows one user through two requests: each reaches the
// engine RequestOverhead(100) after it is sent, is prefilled in one step
// (first token), then decoded in 4 steps over contexts 100..103; the second
// is sent when the first finishes.
func TestReplayByHand(t *testing.T) {
	p := onePoint()
	f := perfmodel.UncalibratedFactors
	sys, err := SystemFor(p, f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Replay{Seed: 1}.Run(context.Background(), p, sys)
	if err != nil {
		t.Fatal(err)
	}
	prefill := asyncStep(sys, []perfmodel.Seq{{NewTokens: 100}})
	var decode float64
	for c := 100; c < 104; c++ {
		decode += asyncStep(sys, []perfmodel.Seq{{NewTokens: 1, ContextTokens: c}})
	}
	over := f.RequestOverhead(100)
	ttft := over + prefill
	perRequest := ttft + decode
	want := Metrics{OutputThroughputPerGPU: 10 / (2 * perRequest) / 2, MedianTPOTSeconds: decode / 4, MedianTTFTSeconds: ttft}
	if !metricsClose(got, want) {
		t.Errorf("replay %+v, want %+v", got, want)
	}
	// A lone user always finds the engine idle: lookahead changes nothing.
	noLook, err := Replay{Seed: 1, NoLookahead: true}.Run(context.Background(), p, sys)
	if err != nil || noLook != got {
		t.Errorf("no lookahead with one user: %+v, %v; want %+v", noLook, err, got)
	}
	// Without async scheduling the CPU overhead adds to every step.
	p.Server.SyncScheduling = true
	sync, err := Replay{Seed: 1}.Run(context.Background(), p, sys)
	if err != nil {
		t.Fatal(err)
	}
	syncTTFT := over + sys.Step([]perfmodel.Seq{{NewTokens: 100}}).Seconds
	if !(sync.MedianTTFTSeconds > got.MedianTTFTSeconds) || math.Abs(sync.MedianTTFTSeconds-syncTTFT) > 1e-12 {
		t.Errorf("sync TTFT %g, want %g (async %g)", sync.MedianTTFTSeconds, syncTTFT, got.MedianTTFTSeconds)
	}
}

// TestReplayConcurrentPrefillsShareSteps: two users with 6000-token prompts
// and a 8192-token budget: the first step prefills one prompt and the first
// 2192 tokens of the other.
func TestReplayConcurrentPrefillsShareSteps(t *testing.T) {
	p := onePoint()
	p.Concurrency, p.NumPrompts, p.InputLen, p.OutputLen = 2, 2, 6000, 2
	f := perfmodel.UncalibratedFactors
	f.RequestOverheadSeconds, f.PromptTokenOverheadSeconds = 0, 0
	sys, err := SystemFor(p, f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Replay{}.Run(context.Background(), p, sys)
	if err != nil {
		t.Fatal(err)
	}
	s1 := asyncStep(sys, []perfmodel.Seq{{NewTokens: 6000}, {NewTokens: 2192}})
	// Step 2: the first request decodes (context 6000), the second finishes its prompt.
	s2 := asyncStep(sys, []perfmodel.Seq{{NewTokens: 1, ContextTokens: 6000}, {NewTokens: 3808, ContextTokens: 2192}})
	s3 := asyncStep(sys, []perfmodel.Seq{{NewTokens: 1, ContextTokens: 6000}})
	ttfts := []float64{s1, s1 + s2}
	tpots := []float64{s2, s3}
	want := Metrics{OutputThroughputPerGPU: 4 / (s1 + s2 + s3) / 2, MedianTTFTSeconds: (ttfts[0] + ttfts[1]) / 2,
		MedianTPOTSeconds: (tpots[0] + tpots[1]) / 2}
	if !metricsClose(got, want) {
		t.Errorf("replay %+v, want %+v", got, want)
	}
}

// TestDecodeStretchMatchesStepSum: the O(log k) sum over a decode stretch
// equals the step-by-step sum, across bound changes.
func TestDecodeStretchMatchesStepSum(t *testing.T) {
	p := onePoint()
	sys, err := SystemFor(p, perfmodel.UncalibratedFactors)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	for range 50 {
		n := 1 + r.IntN(300)
		batch := make([]perfmodel.Seq, n)
		for i := range batch {
			batch[i] = perfmodel.Seq{NewTokens: 1, ContextTokens: 200 + r.IntN(60000)}
		}
		shape := sys.Shape(batch)
		k := 1 + r.IntN(3000)
		var want float64
		async := r.IntN(2) == 0
		for s := range k {
			want += Replay{}.seconds(sys, advance(shape, s), async)
		}
		got := Replay{}.decodeStretch(sys, shape, async, 0, k-1, Replay{}.seconds(sys, shape, async), Replay{}.seconds(sys, advance(shape, k-1), async))
		if math.Abs(got-want) > 1e-9*want {
			t.Fatalf("%d seqs, %d steps: stretch sum %.12g, step sum %.12g", n, k, got, want)
		}
	}
}

func TestReplayDeterministicAndPhysical(t *testing.T) {
	p := readReference(t)[4] // TP 2, 1024/1024, concurrency 64
	p.Model = DefaultModel
	f := perfmodel.UncalibratedFactors
	a, err := Replay{Seed: 3}.Predict(context.Background(), p, f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Replay{Seed: 3}.Predict(context.Background(), p, f)
	if a != b {
		t.Errorf("same seed, different predictions: %+v vs %+v", a, b)
	}
	c, _ := Replay{Seed: 4}.Predict(context.Background(), p, f)
	if c == a {
		t.Error("a different seed replayed identical requests")
	}
	// With lookahead (the default), arrivals wait for the step after the
	// one in flight.
	nl, err := Replay{Seed: 3, NoLookahead: true}.Predict(context.Background(), p, f)
	if err != nil {
		t.Fatal(err)
	}
	if a.MedianTTFTSeconds <= nl.MedianTTFTSeconds {
		t.Errorf("lookahead TTFT %g not above %g without it", a.MedianTTFTSeconds, nl.MedianTTFTSeconds)
	}
	// The same deployment on H200 (faster memory) serves faster.
	h := p
	h.GPU = "h200"
	d, err := Replay{Seed: 3}.Predict(context.Background(), h, f)
	if err != nil {
		t.Fatal(err)
	}
	if d.OutputThroughputPerGPU <= a.OutputThroughputPerGPU || d.MedianTPOTSeconds >= a.MedianTPOTSeconds {
		t.Errorf("H200 %+v not faster than H100 %+v", d, a)
	}
}

func TestReplayErrors(t *testing.T) {
	p := onePoint()
	p.Server.MaxModelLen = 50
	if _, err := (Replay{}).Predict(context.Background(), p, perfmodel.UncalibratedFactors); err == nil {
		t.Error("request longer than max model length accepted")
	}
	p = onePoint()
	p.GPU = "tpu"
	if _, err := (Replay{}).Predict(context.Background(), p, perfmodel.UncalibratedFactors); err == nil {
		t.Error("unknown GPU accepted")
	}
	p = onePoint()
	p.TensorParallel, p.GPUs, p.GPU, p.Model = 1, 1, "a100", "llama-3.1-70b"
	if _, err := (Replay{}).Predict(context.Background(), p, perfmodel.UncalibratedFactors); err == nil {
		t.Error("70B BF16 on one A100 accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = readReference(t)[4]
	p.Model = DefaultModel
	if _, err := (Replay{}).Predict(ctx, p, perfmodel.UncalibratedFactors); err == nil {
		t.Error("cancelled context ignored")
	}
}
