package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

// addCeiling gives the fixture's ceiling the interval, margin and tuned-vs-default comparison a plan with
// sweep.seeds: 5 records. testdata/plan.json predates them; the per-seed
// ceilings are the reference case's (docs/capacity.md), shifted to the
// fixture's ceiling, and the tuned configuration is study trial #17's.
func addCeiling(d *plan.Summary) {
	sim := plan.Provenance{Source: "simulated", Engine: "sim"}
	seeds := func(cs ...int) []capacity.SeedCeiling {
		out := make([]capacity.SeedCeiling, len(cs))
		for i, c := range cs {
			out[i] = capacity.SeedCeiling{Seed: i, Ceiling: c, FirstFailing: c + 3, Runs: 3}
		}
		return out
	}
	def := &capacity.Interval{Lo: 124, Hi: 160, Method: capacity.IntervalMethod, Confidence: 0.95,
		Seeds: seeds(143, 130, 143, 143, 143), MeanUsers: 142.1, StdDevUsers: 5.8}
	tuned := &capacity.Interval{Lo: 122, Hi: 165, Method: capacity.IntervalMethod, Confidence: 0.95,
		Seeds: seeds(146, 127, 140, 143, 146), MeanUsers: 141.9, StdDevUsers: 7.7}
	// the seed interval of a plan with sweep.precision: 0 (no estimate)
	d.Capacity.Estimate, d.Capacity.Refinement = nil, nil
	d.Capacity.Ceiling, d.Capacity.CeilingInterval = d.Capacity.Users, def
	d.Capacity.BindingMargin = &capacity.Margin{Scope: "P2", Clause: "ttft p95", Limit: 2, AtCeiling: 1.93, AtFirstFailing: 2.06, Headroom: 0.035}
	d.TunedVsDefault = &plan.TunedVsDefault{
		Default: plan.CeilingEstimate{Users: 143, FirstFailingUsers: 146, Interval: def, ResolutionUsers: 5, Provenance: sim},
		Tuned:   plan.CeilingEstimate{Users: 146, FirstFailingUsers: 149, Interval: tuned, ResolutionUsers: 5, Provenance: sim},
		Changed: []plan.FlagChange{{Flag: "async-scheduling", Default: false, DefaultIsEngineDefault: true, Tuned: true},
			{Flag: "enforce-eager", Tuned: true}, // a summary written before effective values were recorded
			{Flag: "max-num-batched-tokens", Default: 8192, Tuned: 805}},
		TunedTrial:      17,
		DifferenceUsers: 3,
		Difference:      &capacity.Difference{Users: 3, MeanUsers: -0.6, Lo: -4.5, Hi: 3.3, Method: capacity.DifferenceMethod, Seeds: 5},
		WithinNoise:     true,
		Verdict:         "tuned 146 [122, 165] users vs engine.params 143 [124, 160] users: +3 users on the configured seed, -0.6 [-4.5, +3.3] on average over 5 paired seeds (95 %): within noise — tuning did not measurably raise the ceiling",
	}
}

// TestCeilingSection renders hand-made interval and tuned-vs-default
// blocks (a within-noise case the regenerated fixture does not have) over
// the fixture; the fixture itself keeps the plan's own numbers, which the
// README's pictures show.
func TestCeilingSection(t *testing.T) {
	d := fixture(t)
	addCeiling(d)
	var html, md bytes.Buffer
	if err := report.HTML(&html, d); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<span class="iv"`, "[124, 160]</span>",
		"finds a ceiling in [124, 160] users with 95 % probability",
		"ceilings 143, 130, 143, 143, 143",
		"<strong>Binding clause:</strong> P2 ttft p95 was 1.93 s at the ceiling against its limit of 2.00 s",
		`id="tuned-vs-default"`, "within noise",
		"<td class=\"l\"><code>max-num-batched-tokens</code></td><td class=\"l\">8192</td><td class=\"l\">805</td>",
		"<td class=\"l\"><code>async-scheduling</code></td><td class=\"l\">false (engine default)</td><td class=\"l\">true</td>",
		"<td class=\"l\"><code>enforce-eager</code></td><td class=\"l\">engine default</td><td class=\"l\">true</td>",
		"it contains 0, so the difference is within noise",
	} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("**Capacity: %d [124, 160] concurrent users**", d.Capacity.Users),
		"## Tuned vs default",
		"| tuned (trial #17) | 146 | [122, 165] | 146, 127, 140, 143, 146 | simulated |",
		"| `max-num-batched-tokens` | 8192 | 805 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	// Without seeds the section says why there is no interval and states
	// no tuned-vs-default table.
	d.Capacity.CeilingInterval, d.Capacity.NoInterval, d.TunedVsDefault = nil, "one workload seed (sweep.seeds: 1)", nil
	html.Reset()
	if err := report.HTML(&html, d); err != nil {
		t.Fatal(err)
	}
	if s := html.String(); !strings.Contains(s, "No interval:</strong> one workload seed (sweep.seeds: 1).") || strings.Contains(s, `class="iv"`) || strings.Contains(s, "tuned-vs-default") {
		t.Error("a plan without an interval must say so and draw none")
	}
}

// The sweep chart marks the capacity as the estimate it is and the walk's
// own ceiling beside it: the fixture's capacity is 162 (estimated on fresh
// seeds) and its walk passed 165, so a chart reading "ceiling 162" beside a
// passing level at 165 contradicted itself.
func TestSweepChartSaysEstimateAndWalk(t *testing.T) {
	d := fixture(t)
	if d.Capacity.Estimate == nil || d.Capacity.Ceiling == d.Capacity.Users {
		t.Fatalf("fixture: capacity %d, walk %d, estimate %v: want an estimate away from the walk", d.Capacity.Users, d.Capacity.Ceiling, d.Capacity.Estimate != nil)
	}
	html := render(t, d)
	for _, want := range []string{fmt.Sprintf("capacity %d (estimate)", d.Capacity.Users), fmt.Sprintf("walk %d", d.Capacity.Ceiling)} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, fmt.Sprintf("ceiling %d</text>", d.Capacity.Users)) {
		t.Errorf("the chart still calls the estimate the ceiling")
	}
}
