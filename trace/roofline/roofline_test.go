package roofline

import (
	"math"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/trace"
)

func gptOSS(t *testing.T, gpuName string) (perfmodel.Model, perfmodel.GPU) {
	t.Helper()
	m, err := perfmodel.LookupModel("gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := perfmodel.LookupGPU(gpuName)
	if err != nil {
		t.Fatal(err)
	}
	return m, g
}

func TestPredictW4A16VersusFP4(t *testing.T) {
	m, g := gptOSS(t, "h100")
	mix := BatchMix{DecodeSeqs: 256, DecodeContext: 20000, PrefillTokens: 2048, PrefillContext: 5000}
	preds, err := Predict(m, g, perfmodel.SystemOptions{TensorParallel: 4, CUDAGraphs: true}, mix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(preds) != 2 || preds[0].Assumption != "W4A16" || preds[1].Assumption != "FP4" {
		t.Fatalf("predictions %+v", preds)
	}
	w4, fp4 := preds[0], preds[1]
	if w4.HypotheticalFP4 || !fp4.HypotheticalFP4 {
		t.Errorf("H100 has no FP4: hypothetical flags %v %v", w4.HypotheticalFP4, fp4.HypotheticalFP4)
	}
	// With a 2048-token chunk in the step the expert GEMMs are compute-bound,
	// and BF16 math (W4A16) is four times slower than native FP4.
	if !(w4.Terms.MoE > fp4.Terms.MoE) {
		t.Errorf("MoE time W4A16 %g s should exceed FP4 %g s", w4.Terms.MoE, fp4.Terms.MoE)
	}
	if w4.Terms.Attention != fp4.Terms.Attention {
		t.Errorf("attention does not depend on the expert format: %g vs %g", w4.Terms.Attention, fp4.Terms.Attention)
	}
	for _, p := range preds {
		var sum float64
		for _, v := range p.Split {
			sum += v
		}
		if math.Abs(sum+p.Terms.Overhead-p.StepSeconds) > 1e-12*p.StepSeconds {
			t.Errorf("%s: split %g + overhead %g != step %g", p.Assumption, sum, p.Terms.Overhead, p.StepSeconds)
		}
		if !(p.OverheadShare > 0 && p.OverheadShare < 1) {
			t.Errorf("%s: overhead share %g", p.Assumption, p.OverheadShare)
		}
	}

	b200Model, b200 := gptOSS(t, "b200")
	preds, err = Predict(b200Model, b200, perfmodel.SystemOptions{TensorParallel: 2}, mix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if preds[1].HypotheticalFP4 {
		t.Error("B200 has native FP4")
	}
}

func TestCompareWithMeasured(t *testing.T) {
	m, g := gptOSS(t, "h100")
	preds, err := Predict(m, g, perfmodel.SystemOptions{TensorParallel: 4}, BatchMix{DecodeSeqs: 64, DecodeContext: 8000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := trace.Aggregate("x", []trace.Interval{
		{Device: 0, StartNS: 0, EndNS: 50, Name: "flash_fwd_kernel"},
		{Device: 0, StartNS: 50, EndNS: 80, Name: "_matmul_ogs_x"},
		{Device: 0, StartNS: 80, EndNS: 90, Name: "nvjet_tst"},
		{Device: 0, StartNS: 90, EndNS: 100, Name: "ncclDevKernel_AllReduce"},
	}, trace.Window{})
	b, err := trace.Analyze(&p, trace.DefaultRules(), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmps, err := Compare(b, preds)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmps) != 2 {
		t.Fatalf("%d comparisons", len(cmps))
	}
	rows := cmps[0].Comparison.Rows
	if len(rows) != 5 || rows[0].Key != "attention" || rows[0].MeasuredShare != 0.5 {
		t.Errorf("rows %+v", rows)
	}
	var pred float64
	for _, r := range rows {
		pred += r.PredictedShare
	}
	if math.Abs(pred-1) > 1e-12 {
		t.Errorf("predicted shares sum to %g", pred)
	}
}

func TestBatchMixErrors(t *testing.T) {
	m, g := gptOSS(t, "h100")
	for _, mix := range []BatchMix{{}, {DecodeSeqs: -1}, {PrefillTokens: 1, PrefillContext: -2}} {
		if _, err := Predict(m, g, perfmodel.SystemOptions{TensorParallel: 4}, mix, nil); err == nil || !strings.Contains(err.Error(), "batch mix") {
			t.Errorf("mix %+v: error %v", mix, err)
		}
	}
	if _, err := Predict(m, g, perfmodel.SystemOptions{TensorParallel: 3}, BatchMix{DecodeSeqs: 1}, nil); err == nil {
		t.Error("64 heads over TP=3 must fail")
	}
}
