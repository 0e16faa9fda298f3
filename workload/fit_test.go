package workload

import (
	"math"
	"testing"

	"github.com/spoc-project/spoc/corpus"
)

// TestFitRecoversSyntheticSpec: fitting trajectories drawn from
// corpus.DefaultSyntheticSpec recovers its distributions — per-call
// lognormal medians within 10 %, sigmas within 0.1, the first-call context
// within 20 % (one draw per trajectory).
func TestFitRecoversSyntheticSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("counts about a million tokens")
	}
	tok := testTokenizer(t)
	spec := corpus.DefaultSyntheticSpec
	trajs, err := corpus.Synthesize(11, 120, spec, tok)
	if err != nil {
		t.Fatal(err)
	}
	var ms []corpus.Measure
	for i := range trajs {
		m, err := corpus.MeasureTrajectory(&trajs[i], tok)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	f, err := Fit(ms, "agent")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got Sample, want corpus.LogNormal) {
		if math.Abs(got.Median/want.Median-1) > 0.10 || math.Abs(got.Sigma-want.Sigma) > 0.1 {
			t.Errorf("%s: fitted median %.1f sigma %.3f, generated %.0f / %.2f", what, got.Median, got.Sigma, want.Median, want.Sigma)
		}
	}
	check("growth (tool results)", f.Growth, spec.ToolTokens)
	check("tool output", f.ToolOutput, spec.ToolTokens)
	check("output tokens", f.OutputTokens, spec.OutputTokens)
	// Context at the first call is the system prompt plus the task: one
	// draw per trajectory, so the median's standard error is about 6 % here.
	if want := float64(spec.SystemTokens) + spec.TaskTokens.Median; math.Abs(float64(f.ContextStart.P50)/want-1) > 0.20 {
		t.Errorf("context start p50 %d, want %.0f ± 20 %%", f.ContextStart.P50, want)
	}
	if f.Turns.P10 < spec.MinSteps || f.Turns.Max > spec.MaxSteps {
		t.Errorf("turns %+v outside [%d, %d]", f.Turns, spec.MinSteps, spec.MaxSteps)
	}
	if _, err := NewDist(f.Profile.Growth); err != nil {
		t.Fatalf("fitted profile growth: %v", err)
	}
	if _, err := Fit(nil, "x"); err == nil {
		t.Fatal("empty fit accepted")
	}
}
