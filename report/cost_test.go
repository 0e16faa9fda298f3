package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

// The "Serving N users" section renders in HTML and summary.md from pinned
// ceilings (the fixture's are regenerated with every simulator change):
// 1000 users, H100 at a made-up $3.00 per GPU-hour, H200 without a price
// (so its cost is said to be missing).
func TestCostSectionRenders(t *testing.T) {
	d := fixture(t)
	if len(d.Compare) != 2 {
		t.Fatalf("fixture has %d compare rows, want 2", len(d.Compare))
	}
	c := &d.Capacity
	// no seed interval: the cost section falls back to [ceiling − step, ceiling]
	c.Users, c.FirstFailingUsers, c.ResolutionUsers, c.CeilingInterval, c.Estimate = 143, 146, 3, nil, nil
	h100, h200 := &d.Compare[0], &d.Compare[1]
	h100.Users, h100.FirstFailingUsers, h100.ResolutionUsers, h100.CeilingInterval, h100.Estimate = 143, 146, 3, nil, nil
	h200.Users, h200.FirstFailingUsers, h200.ResolutionUsers, h200.CeilingInterval, h200.Estimate = 34, 37, 3, nil, nil
	cost, note := plan.ServingCost(d, plan.Demand{Users: 1000, Headroom: 0.8, PricePerGPUHour: map[string]float64{"H100-SXM": 3}})
	if cost == nil {
		t.Fatalf("no cost section: %s", note)
	}
	d.Cost = cost
	html := render(t, d)
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	// 4× H100 at [140, 143]: 9 deployments, 36 GPUs, $108/h, $78.84 per
	// user-month; 2× H200 at [31, 34]: 37–41 deployments, 74–82 GPUs.
	for _, want := range []string{"Serving 1000 users", "140–143", "$108.00", "$78.84", "31–34", "37–41", "74–82", "no price", "no price for H200-SXM", "always simulated"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	if !strings.Contains(html, `<section id="cost">`) || !strings.Contains(html, `href="#cost"`) {
		t.Error("HTML has no cost section or no link to it")
	}
	if !strings.Contains(md, "## Serving 1000 users") {
		t.Error("summary.md has no cost heading")
	}
}

func TestCostSectionAbsentWithoutTarget(t *testing.T) {
	d := fixture(t)
	d.Cost = nil
	if html := render(t, d); strings.Contains(html, `id="cost"`) || strings.Contains(html, "Serving ") {
		t.Error("HTML shows a cost section for a plan that asked no user count")
	}
}

// A cost section sized at a peak mix says so, with the mix, in both
// renderings.
func TestCostSectionNamesThePeakMix(t *testing.T) {
	d := fixture(t)
	if d.Cost == nil {
		t.Fatal("fixture has no cost section")
	}
	d.Cost.PeakShares = map[string]float64{"P1": 0.3, "P0": 0.5, "P2": 0.2}
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	const want = "profile mix (P0 50.0%, P1 30.0%, P2 20.0%, plan.peak_shares)"
	for name, page := range map[string]string{"HTML": render(t, d), "summary.md": buf.String()} {
		if !strings.Contains(page, want) {
			t.Errorf("%s does not name the peak mix", name)
		}
	}
	d.Cost.PeakShares = nil
	if strings.Contains(render(t, d), "plan.peak_shares") {
		t.Error("a cost section at the workload's mix claims a peak mix")
	}
}

// The simulated fleet's sizing is said beside the division, with every
// fleet simulated, in both renderings.
func TestCostSectionShowsTheSimulatedFleet(t *testing.T) {
	d := fixture(t)
	cost, note := plan.ServingCost(d, plan.Demand{Users: 1000, Headroom: 0.8})
	if cost == nil {
		t.Fatalf("no cost section: %s", note)
	}
	cost.Fleet = &plan.FleetSize{Router: "session-affinity", TargetUsers: 1000, GPUsPerReplica: 4, Replicas: 7, MaxReplicas: 32, DivisionReplicas: 8,
		Runs:       []plan.FleetSizeRun{{Replicas: 6, FailedClause: "P0 ttft p95 2.19s > 2s", PrefixHitRate: 0.807}, {Replicas: 7, Pass: true, PrefixHitRate: 0.873}},
		Provenance: plan.Provenance{Source: "simulated", Engine: "sim"}}
	d.Cost = cost
	html := render(t, d)
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"behind the session-affinity router at 1000 users", "7 replicas meet the SLA and 6 do not; the division says 8 (-1)",
		"6 replicas: fails: P0 ttft p95 2.19s &gt; 2s (prefix-cache hit rate 80.7%)", "7 replicas: meets the SLA (prefix-cache hit rate 87.3%)"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
		if md := strings.ReplaceAll(buf.String(), "\\>", "&gt;"); !strings.Contains(md, strings.ReplaceAll(want, "&gt;", ">")) && !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	cost.Fleet.Replicas = 0
	if html := render(t, d); !strings.Contains(html, "no fleet of up to 32 replicas meets the SLA, where the division says 8 replicas") {
		t.Error("HTML does not say that no fleet size met the SLA")
	}
}

// The small live fleet a plan verified is shown beside the simulated
// sizing, with both verdicts at each load, and says so when it disagrees.
func TestCostSectionShowsTheVerifiedFleet(t *testing.T) {
	d := fixture(t)
	cost, note := plan.ServingCost(d, plan.Demand{Users: 1000, Headroom: 0.8})
	if cost == nil {
		t.Fatalf("no cost section: %s", note)
	}
	cost.Fleet = &plan.FleetSize{Router: "round-robin", TargetUsers: 1000, GPUsPerReplica: 4, Replicas: 7, MaxReplicas: 32, DivisionReplicas: 8,
		Provenance: plan.Provenance{Source: "simulated", Engine: "sim"},
		Verified: &plan.FleetVerify{Replicas: 3, Router: "round-robin", PredictedCeiling: 27, PredictedFirstFailing: 30, Agree: true, EngineSeconds: 412,
			Runs: []plan.FleetVerifyRun{
				{Users: 27, Aim: "ceiling", LiveRequests: 410, PredictedRequests: 400, PredictedPass: true, Predicted: plan.Latencies{TTFTP95Ms: 1800, PrefixCacheHitRate: 0.45}, LivePass: true, Measured: plan.Latencies{TTFTP95Ms: 1700, PrefixCacheHitRate: 0.41}, Records: "fleet-verify/fleet-3-27users.jsonl"},
				{Users: 30, Aim: "first failing", LiveRequests: 433, Predicted: plan.Latencies{TTFTP95Ms: 3400}, LiveFailed: "overall ttft p95 3.6s > 3s", Measured: plan.Latencies{TTFTP95Ms: 3600, PrefixCacheHitRate: 0.39}, Records: "fleet-verify/fleet-3-30users.jsonl"},
			}}}
	d.Cost = cost
	var buf bytes.Buffer
	if err := report.Markdown(&buf, d); err != nil {
		t.Fatal(err)
	}
	html := render(t, d)
	for _, want := range []string{"Verified live: 3 replicas behind round-robin", "simulated ceiling 27 users (first failing 30)",
		"run live at 27 (the simulated ceiling) and 30 (the simulated first failing count) users", "agrees with the simulated one at every load run",
		"27 users: predicted meets the SLA (400 requests completed, TTFT p95 1.80 s, prefix-cache hit rate 45.0%)", "live meets the SLA (410 requests completed, TTFT p95 1.70 s, prefix-cache hit rate 41.0%",
		"30 users: predicted fails (0 requests completed, TTFT p95 3.40 s, no prefix-cache hit rate: no request completed)", "30 users: predicted fails", "live fails: overall ttft p95 3.6s"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
		if !strings.Contains(strings.ReplaceAll(buf.String(), "\\>", ">"), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	// the text follows the runs: a verdict that differs, a run judged on
	// neither side, a verification that failed
	runs := cost.Fleet.Verified.Runs
	runs[1].LivePass, runs[1].LiveFailed = true, ""
	if html := render(t, d); !strings.Contains(html, "Live fleet check: 3 replicas") || !strings.Contains(html, "does NOT agree with the simulated one at 30 users") {
		t.Error("a disagreeing verification is not said")
	}
	runs[1].LivePass, runs[1].LiveFailed = false, "overall ttft p95 3.6s > 3s"
	runs[0].Aim, runs[0].PredictedUnjudged = "unconfirmed", true
	if html := render(t, d); !strings.Contains(html, "nothing confirmed: too few samples to judge at 27 users") || strings.Contains(html, "Verified live:") ||
		!strings.Contains(html, "27 (the largest count the simulated walk passed, on too few samples to judge)") || !strings.Contains(html, "27 users: predicted unjudged (too few samples)") {
		t.Error("a verification whose simulated run was unjudged reads as verified")
	}
	runs[0].PredictedUnjudged, runs[0].LiveRequests, runs[0].LiveUnjudged = false, 0, true
	if html := render(t, d); !strings.Contains(html, "nothing confirmed") || !strings.Contains(html, "live unjudged (too few samples) (0 requests completed") {
		t.Error("a live run that completed no request reads as judged")
	}
	cost.Fleet.Verified.Error = "2 replicas live at 30 users: the server is gone"
	if html := render(t, d); !strings.Contains(html, "the verification FAILED (2 replicas live at 30 users: the server is gone)") {
		t.Error("a failed verification is not said")
	}
	cost.Fleet.Verified = &plan.FleetVerify{Replicas: 2, Router: "round-robin", Skipped: "plan.budget: 30s of engine time left"}
	if html := render(t, d); !strings.Contains(html, "Not verified live on 2 replicas behind round-robin: plan.budget") {
		t.Error("a skipped verification does not say why")
	}
}
