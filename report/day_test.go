package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
)

// The day section draws the users against the serving replicas' capacity
// and the per-minute p95 TTFT and ITL against the SLA for every policy, and
// tabulates attainment and GPU-hours; a plan without a day has no section.
func TestDaySectionRenders(t *testing.T) {
	d := fixture(t)
	if html := render(t, d); strings.Contains(html, `id="day"`) {
		t.Fatal("a plan without a day section renders one")
	}
	minutes := func(ttft float64) []result.AttainmentBin {
		out := make([]result.AttainmentBin, 120)
		for m := range out {
			out[m] = result.AttainmentBin{Start: float64(m) * 60, Requests: 40, TTFT: ttft, ITL: 0.012, Within: ttft < 2}
		}
		return out
	}
	users := make([]float64, 120)
	for m := range users {
		users[m] = 50 + 3*float64(m)
	}
	d.Day = &plan.DaySummary{LengthSeconds: 7200, MeanSessionSeconds: 877, PeakUsers: 400, CeilingPerReplica: 155, Headroom: 0.8, StaticReplicas: 4, GPUsPerReplica: 4, StartupSeconds: 300, Users: users,
		Rows: []plan.DayRow{
			{Policy: "static", GPUHours: 32, VsStatic: 1, Cost: 96, PeakReplicas: 4, Replicas: []sim.ScaleEvent{{At: 0, Serving: 4}}, Minutes: minutes(0.4),
				Attainment: []result.AttainmentRow{{Profile: "overall", RequestShare: 0.999, MinuteShare: 0.992}, {Profile: "P0", RequestShare: 1, MinuteShare: 1}}},
			{Policy: "target-tracking 80%", GPUHours: 18.8, VsStatic: 0.59, PeakReplicas: 4, Replicas: []sim.ScaleEvent{{At: 0, Serving: 1}, {At: 1800, Serving: 1, Starting: 2}, {At: 2100, Serving: 3}}, Minutes: minutes(2.5),
				Attainment: []result.AttainmentRow{{Profile: "overall", RequestShare: 0.948, MinuteShare: 0.767}},
				Worst:      []plan.WorstMinute{{Start: 1860, Requests: 40, TTFT: 4.2, ITL: 0.031, Severity: 2.8, Serving: 1, Starting: 2, HitShare: 0.41, DayHitShare: 0.86, Imbalance: 1, Causes: []string{plan.CauseScaleUpLag}}}},
		}}
	html := render(t, d)
	for _, want := range []string{`id="day"`, `href="#day"`, "A day of traffic", "Users and the serving replicas", "p95 TTFT per minute", "p95 ITL per minute",
		"99.9%", "99.2%", "76.7%", "32.0", "0.59×", "$96", "target-tracking 80%", "mean session of 877 s", "SLA p95",
		"The worst minutes and why", "00:31", "4.20 s", "scale-up lag", "1 serving, 2 starting", "41.0% (day 86.0%)"} {
		if !strings.Contains(html, want) {
			t.Errorf("day section lacks %q", want)
		}
	}
	if n := strings.Count(html[strings.Index(html, `id="day"`):], "<svg"); n < 3 {
		t.Errorf("day section has %d charts, want 3", n)
	}
	// summary.md carries the same rows and worst minutes
	var md bytes.Buffer
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## A day of traffic", "mean session of 877 s",
		"| static | overall | 99.9% | 99.2% | 32.0 | 1.00× | $96 | 4 |",
		"| target-tracking 80% | overall | 94.8% | 76.7% | 18.8 | 0.59× | – | 4 |",
		"| target-tracking 80% | 00:31 | 4.20 s | 31 ms | scale-up lag | 1 serving, 2 starting |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("summary.md's day section lacks %q", want)
		}
	}
}

// The day's sensitivity to start-up time (summary.json day.
// startup_sensitivity) renders as a chart of attainment against the
// start-up time, a table, and the start-up above which target tracking
// misses the morning ramp; without one, the section has neither.
func TestDaySensitivityRenders(t *testing.T) {
	d := fixture(t)
	d.Day = &plan.DaySummary{LengthSeconds: 7200, MeanSessionSeconds: 883, PeakUsers: 400, CeilingPerReplica: 158, Headroom: 0.8, StaticReplicas: 4, GPUsPerReplica: 4, StartupSeconds: 300,
		Users: []float64{50, 50},
		Rows: []plan.DayRow{{Policy: "target-tracking 80%", GPUHours: 19.2, VsStatic: 0.6, PeakReplicas: 4, Replicas: []sim.ScaleEvent{{At: 0, Serving: 1}},
			Attainment: []result.AttainmentRow{{Profile: "overall", RequestShare: 0.971, MinuteShare: 0.883}}}}}
	html := render(t, d)
	if strings.Contains(html, "Sensitivity to start-up time") {
		t.Fatal("a day without startup_sensitivity renders the sensitivity")
	}
	d.Day.Sensitivity = &plan.StartupSensitivity{Policy: "target-tracking 80%", MissShare: plan.RampMissShare, MissesRampFromSeconds: 600, Points: []plan.SensitivityPoint{
		{StartupSeconds: 0, RequestShare: 0.971, MinuteShare: 0.867, GPUHours: 19.4, VsStatic: 0.61},
		{StartupSeconds: 120, RequestShare: 0.966, MinuteShare: 0.842, GPUHours: 19.5, VsStatic: 0.61},
		{StartupSeconds: 300, RequestShare: 0.971, MinuteShare: 0.883, GPUHours: 19.2, VsStatic: 0.60},
		{StartupSeconds: 600, RequestShare: 0.864, MinuteShare: 0.642, GPUHours: 19.7, VsStatic: 0.61},
	}}
	html = render(t, d)
	sec := html[strings.Index(html, "Sensitivity to start-up time"):]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{"Attainment against the replica start-up time", "start-up time (minutes)",
		"Above a start-up of 5 min, target-tracking 80% misses the morning ramp: from 10 min its requests within the SLA fall more than 2 points below a start-up of 0 s (86.4% against 97.1%).",
		"<td>2 min</td><td>96.6%</td><td>84.2%</td><td>19.5</td><td>0.61×</td><td class=\"l\">kept</td>",
		"<td>10 min</td><td>86.4%</td><td>64.2%</td><td>19.7</td><td>0.61×</td><td class=\"l\">missed</td>", "misses the ramp", "0 s − 2 points"} {
		if !strings.Contains(sec, want) {
			t.Errorf("sensitivity lacks %q", want)
		}
	}
	if n := strings.Count(sec, "<svg"); n != 1 {
		t.Errorf("sensitivity has %d charts, want 1", n)
	}
	d.Day.Sensitivity.MissesRampFromSeconds = -1
	if html := render(t, d); !strings.Contains(html, "Up to a start-up of 10 min, target-tracking 80% keeps its requests within the SLA within 2 points of a start-up of 0 s") {
		t.Error("a day that never misses the ramp does not say so")
	}
}
