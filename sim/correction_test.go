package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

// A model without a roofline (LinearCost) has its GPU terms scaled by
// Compute in a step that computes a prompt chunk and by Memory in a step
// that only decodes; the per-step seconds go to the overhead term.
func TestCorrectionOfAModelWithoutRoofline(t *testing.T) {
	base := LinearCost{StepSeconds: 0.010, TokenSeconds: 0.001}
	c, err := corrected(base, Correction{Compute: 2, Memory: 3, StepSeconds: 0.005})
	if err != nil {
		t.Fatal(err)
	}
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
		{"mixed", mixed, 2},
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
	for _, id := range []Correction{{}, {Compute: 1, Memory: 1}} {
		if m, err := corrected(base, id); err != nil {
			t.Error(err)
		} else if _, ok := m.(LinearCost); !ok {
			t.Errorf("the identity correction %+v wrapped the model", id)
		}
	}
}

// On the roofline model the multipliers act inside each kernel: a
// compute-bound prefill step slows by Compute and not by Memory, a
// memory-bound decode step by Memory and not by Compute, whatever the
// other multiplier is. This is what lets a correction fitted at one flag
// setting carry to another.
func TestCorrectionActsInsideTheRoofline(t *testing.T) {
	dep, err := NewDeployment(ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dep.Build()
	if err != nil {
		t.Fatal(err)
	}
	decode := make([]perfmodel.Seq, 8)
	for i := range decode {
		decode[i] = perfmodel.Seq{NewTokens: 1, ContextTokens: 2000}
	}
	prefill := []perfmodel.Seq{{NewTokens: 8192, ContextTokens: 0}}
	gpu := func(c perfmodel.StepCost) float64 { return c.Seconds - c.Terms.Overhead - c.Terms.Communication }
	for _, tc := range []struct {
		name   string
		corr   Correction
		batch  []perfmodel.Seq
		lo, hi float64 // bounds of the GPU-time ratio
	}{
		{"decode, memory ×1.5", Correction{Compute: 1, Memory: 1.5}, decode, 1.35, 1.5 + 1e-9},
		{"decode, compute ×1.5", Correction{Compute: 1.5, Memory: 1}, decode, 1, 1.1},
		{"prefill, compute ×1.5", Correction{Compute: 1.5, Memory: 1}, prefill, 1.35, 1.5 + 1e-9},
		{"prefill, memory ×1.5", Correction{Compute: 1, Memory: 1.5}, prefill, 1, 1.15},
	} {
		d := dep
		d.Correction = tc.corr
		cl, err := d.Build()
		if err != nil {
			t.Fatal(err)
		}
		p, s := plain.engines[0].base.Step(tc.batch), cl.engines[0].base.Step(tc.batch)
		if r := gpu(s) / gpu(p); r < tc.lo || r > tc.hi {
			t.Errorf("%s: GPU time ratio %.3f, want in [%.2f, %.2f]", tc.name, r, tc.lo, tc.hi)
		}
		if s.Terms.Overhead != p.Terms.Overhead {
			t.Errorf("%s: overhead %g, want %g", tc.name, s.Terms.Overhead, p.Terms.Overhead)
		}
	}
	d := dep
	d.Correction = Correction{Compute: 1, Memory: 1, StepSeconds: 0.002}
	cl, err := d.Build()
	if err != nil {
		t.Fatal(err)
	}
	p, s := plain.engines[0].base.Step(decode), cl.engines[0].base.Step(decode)
	if math.Abs(s.Terms.Overhead-p.Terms.Overhead-0.002) > 1e-12 || math.Abs(gpu(s)-gpu(p)) > 1e-12 {
		t.Errorf("step +2 ms: overhead %g → %g, GPU %g → %g", p.Terms.Overhead, s.Terms.Overhead, gpu(p), gpu(s))
	}
}

func TestCorrectionSurvivesThrottling(t *testing.T) {
	base := LinearCost{StepSeconds: 0.010, TokenSeconds: 0.001}
	c, err := corrected(base, Correction{Compute: 1, Memory: 2})
	if err != nil {
		t.Fatal(err)
	}
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

// A slower memory makes a decode step's kernels slower by about the factor, and leaves nothing else of the deployment changed.
func TestCorrectionSlowsASimulatedDeployment(t *testing.T) {
	dep, err := NewDeployment(ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dep.Build()
	if err != nil {
		t.Fatal(err)
	}
	dep.Correction = Correction{Compute: 1, Memory: 1.5}
	slow, err := dep.Build()
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]perfmodel.Seq, 32)
	for i := range batch {
		batch[i] = perfmodel.Seq{NewTokens: 1, ContextTokens: 8000}
	}
	p, s := plain.engines[0].base.Step(batch), slow.engines[0].base.Step(batch)
	// the collectives run on NVLink, which the correction leaves alone
	ratio := (s.Seconds - s.Terms.Overhead - s.Terms.Communication) / (p.Seconds - p.Terms.Overhead - p.Terms.Communication)
	if ratio < 1.4 || ratio > 1.5+1e-9 || s.Terms.Overhead != p.Terms.Overhead || s.Terms.Communication != p.Terms.Communication {
		t.Errorf("decode GPU time ratio %g (overhead %g vs %g), want about 1.5 and equal overhead", ratio, s.Terms.Overhead, p.Terms.Overhead)
	}
	dep.Correction = Correction{Compute: -1, Memory: 1}
	if _, err := dep.Build(); err == nil || !strings.Contains(err.Error(), "compute") {
		t.Errorf("negative compute multiplier: err %v", err)
	}
}

func TestReadCorrection(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    Correction
	}{
		{in: `{"compute": 1.2, "memory": 0.9, "step_seconds": 0.001}`, want: Correction{1.2, 0.9, 0.001}},
		{in: `{"correction": {"compute": 1.2, "memory": 0.9, "step_seconds": 0}, "fit": {"rmse": 0.1}}`, want: Correction{1.2, 0.9, 0}},
		{in: `{"compute": 1.2, "memory": 0.9, "step": 0}`, err: `unknown field "step"`},
		{in: `{"compute": 0, "memory": 0.9}`, err: "compute must be a positive"},
		{in: `{"compute": 1, "memory": 1, "step_seconds": 5}`, err: "step_seconds"},
		{in: `{"correction": {"prefill": 1.2, "decode": 0.9, "step_seconds": 0}}`, err: "fit it again with spoc sim calibrate --records"},
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
