package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

func TestCorrectionScalesPrefillAndDecodeApart(t *testing.T) {
	base := LinearCost{StepSeconds: 0.010, TokenSeconds: 0.001}
	c := corrected(base, Correction{Prefill: 2, Decode: 3, StepSeconds: 0.005})
	decode := []perfmodel.Seq{{NewTokens: 1, ContextTokens: 100}, {NewTokens: 1, ContextTokens: 50}}
	prefill := []perfmodel.Seq{{NewTokens: 100}}
	mixed := []perfmodel.Seq{{NewTokens: 1, ContextTokens: 100}, {NewTokens: 3}}
	for _, tc := range []struct {
		name  string
		batch []perfmodel.Seq
		k     float64
	}{
		{"decode", decode, 3},
		{"prefill", prefill, 2},
		{"mixed", mixed, (2*3 + 3*1) / 4.0}, // token-weighted
	} {
		b, got := base.Step(tc.batch), c.Step(tc.batch)
		want := (b.Seconds-b.Terms.Overhead)*tc.k + b.Terms.Overhead + 0.005
		if math.Abs(got.Seconds-want) > 1e-12 {
			t.Errorf("%s: %g s, want %g", tc.name, got.Seconds, want)
		}
	}
	if got := c.Step(nil); got.Seconds != 0 {
		t.Errorf("empty batch costs %g", got.Seconds)
	}
	if _, ok := corrected(base, Correction{}).(LinearCost); !ok {
		t.Error("the zero correction wrapped the model")
	}
	if _, ok := corrected(base, Correction{Prefill: 1, Decode: 1}).(LinearCost); !ok {
		t.Error("the identity correction wrapped the model")
	}
}

func TestCorrectionSurvivesThrottling(t *testing.T) {
	base := LinearCost{StepSeconds: 0.010, TokenSeconds: 0.001}
	c := corrected(base, Correction{Prefill: 1, Decode: 2})
	th, err := throttledCosts(c, []float64{0.5})
	if err != nil {
		t.Fatal(err)
	}
	batch := []perfmodel.Seq{{NewTokens: 1}}
	b := base.Step(batch)
	want := (b.Seconds-b.Terms.Overhead)*2/0.5 + b.Terms.Overhead
	if got := th.Step(batch).Seconds; math.Abs(got-want) > 1e-12 {
		t.Errorf("throttled corrected step %g s, want %g", got, want)
	}
}

// A slower decode makes a simulated run's inter-token latency longer by
// about the factor, and leaves nothing else of the deployment changed.
func TestCorrectionSlowsASimulatedDeployment(t *testing.T) {
	dep, err := NewDeployment(ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dep.Build()
	if err != nil {
		t.Fatal(err)
	}
	dep.Correction = Correction{Prefill: 1, Decode: 1.5}
	slow, err := dep.Build()
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]perfmodel.Seq, 32)
	for i := range batch {
		batch[i] = perfmodel.Seq{NewTokens: 1, ContextTokens: 8000}
	}
	p, s := plain.engines[0].base.Step(batch), slow.engines[0].base.Step(batch)
	ratio := (s.Seconds - s.Terms.Overhead) / (p.Seconds - p.Terms.Overhead)
	if math.Abs(ratio-1.5) > 1e-9 || s.Terms.Overhead != p.Terms.Overhead {
		t.Errorf("decode GPU time ratio %g (overhead %g vs %g), want 1.5 and equal overhead", ratio, s.Terms.Overhead, p.Terms.Overhead)
	}
	dep.Correction = Correction{Prefill: -1, Decode: 1}
	if _, err := dep.Build(); err == nil || !strings.Contains(err.Error(), "prefill") {
		t.Errorf("negative prefill multiplier: err %v", err)
	}
}

func TestReadCorrection(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    Correction
	}{
		{in: `{"prefill": 1.2, "decode": 0.9, "step_seconds": 0.001}`, want: Correction{1.2, 0.9, 0.001}},
		{in: `{"correction": {"prefill": 1.2, "decode": 0.9, "step_seconds": 0}, "fit": {"rmse": 0.1}}`, want: Correction{1.2, 0.9, 0}},
		{in: `{"prefill": 1.2, "decode": 0.9, "step": 0}`, err: `unknown field "step"`},
		{in: `{"prefill": 0, "decode": 0.9}`, err: "prefill must be a positive"},
		{in: `{"prefill": 1, "decode": 1, "step_seconds": 5}`, err: "step_seconds"},
		{in: `[1,2]`, err: "read correction x.json"},
	} {
		got, err := ReadCorrection(strings.NewReader(tc.in), "x.json")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
