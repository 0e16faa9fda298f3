package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

// TestEstimateReachesEveryOutput reads the default plan's capacity
// estimate (testdata/plan.json, written by a real plan: -fixture) where a
// user reads it: summary.json names the estimator, both intervals, the
// precision reached and the engine time; the report's verdict and
// summary.md state the estimate with its confidence interval, what the
// precision cost and the spread over workload seeds.
func TestEstimateReachesEveryOutput(t *testing.T) {
	raw, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Capacity map[string]json.RawMessage `json:"capacity"`
	}
	if err := json.Unmarshal(raw, &js); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"estimate", "refinement", "runs", "engine_seconds", "ceiling"} {
		if _, ok := js.Capacity[k]; !ok {
			t.Errorf("summary.json's capacity has no %q", k)
		}
	}
	d := fixture(t)
	c := d.Capacity
	e := c.Estimate
	if e == nil {
		t.Fatalf("the default plan made no estimate: %s", c.NoEstimate)
	}
	if e.Method != capacity.EstimatorMethod || !e.Bounded || e.SeedSpread == nil || e.Binding == "" {
		t.Fatalf("estimate %+v: want the estimator's method, a bounded interval, a seed spread and a binding clause", e)
	}
	if c.Users != int(math.Floor(e.Users)) {
		t.Errorf("capacity.users %d, want the estimate %.1f rounded down", c.Users, e.Users)
	}
	if !(e.Lo <= e.Users && e.Users <= float64(e.Hi)) {
		t.Errorf("estimate %.1f outside its interval [%.1f, %.1f]", e.Users, e.Lo, float64(e.Hi))
	}
	r := c.Refinement
	if r == nil || r.Target != 0.10 || !r.Reached || float64(e.Precision) > r.Target || r.Runs < 6 {
		t.Fatalf("refinement %+v with precision %.3f: want the default ±10 %% reached with at least 6 fresh-seed runs", r, float64(e.Precision))
	}
	if c.Runs <= r.Runs || c.EngineSeconds <= 0 {
		t.Errorf("runs %d (refinement %d), engine seconds %.0f: want the walk's levels and the refinement counted, with their engine time", c.Runs, r.Runs, c.EngineSeconds)
	}
	html := render(t, d)
	var md bytes.Buffer
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	text := plan.EstimateText(e)
	// the interval by its ends, never as a "±" (it is seldom centred)
	label := fmt.Sprintf("%.0f %% confidence · [%d, %d]", 100*e.Confidence, int(math.Floor(e.Lo)), int(math.Floor(float64(e.Hi))))
	for _, want := range []string{text, label, "Precision target ±10 % (sweep.precision): reached", "Spread over workload seeds:", e.Method} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// the walk's clause nearest its limit is not the estimate's binding
	// clause, so it is not labelled as such
	if c.BindingMargin != nil && (!strings.Contains(html, "<strong>Nearest its limit on the walk:</strong>") || strings.Contains(html, "Binding clause:")) {
		t.Error("report.html: with an estimate, the walk's margin must read \"Nearest its limit on the walk\", not \"Binding clause\"")
	}
	// the walk's first failure is one seed's: not "above" the estimate
	if c.FirstFailingUsers > 0 && (strings.Contains(md.String(), "Above it, at") || !strings.Contains(md.String(), fmt.Sprintf("The walk on workload.seed first failed at %d users", c.FirstFailingUsers))) {
		t.Errorf("summary.md places the walk's first failure above the estimate:\n%s", md.String()[:min(600, md.Len())])
	}
	if strings.Contains(text, "±") || strings.Contains(md.String(), fmt.Sprintf("%d ±", c.Users)) {
		t.Errorf("the estimate reads as centred: %q", text)
	}
	for _, want := range []string{fmt.Sprintf("**Capacity: %d %s", c.Users, plan.IntervalText(e)), text, "Precision target ±10 % (sweep.precision): reached"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
}
