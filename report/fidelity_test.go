package report_test

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
	"github.com/spoc-project/spoc/sim"
)

// A multi plan's fidelity section shows the correction with its errors,
// every probe and every verified point predicted against measured, and
// engine time per phase; a summary without the section renders without it.
func TestFidelitySectionRenders(t *testing.T) {
	d := fixture(t)
	d.Fidelity = nil
	if html := render(t, d); strings.Contains(html, `<section id="fidelity">`) {
		t.Error("a summary without a fidelity section rendered one")
	}
	held := 0.083
	kept := 3
	pf := func(x float64) *float64 { return &x }
	d.Fidelity = &plan.FidelityReport{Mode: plan.FidelityMulti, PredictedCeiling: 80, LiveEngineSeconds: 61.5, GPUHours: 0.0171, VerifyTopK: 2, KeptTrial: &kept,
		FinalCeiling: 78, FinalProvenance: plan.Provenance{Source: "live", Engine: "process"},
		Correction: &sim.Correction{Compute: 1.234, Memory: 1.456, StepSeconds: 0.0003},
		Fit: &plan.FitReport{Metrics: []string{"itl_p95"}, UncalibratedError: pf(0.41), FittedError: pf(0.062), HeldBackError: &held,
			Terms: []plan.FitTerm{{Name: "compute", Value: 1.234, Identified: true, Step: "±20 %", Rise: 0.1},
				{Name: "step_seconds", Value: 0, Identified: false, Step: "±0.5 ms", Rise: 0.002}}},
		Probes: []plan.ProbePoint{
			{Users: 44, Why: "light load", Params: map[string]any{"max-num-seqs": 256}, Live: plan.Latencies{TTFTP50Ms: 62, TTFTP95Ms: 300, ITLP95Ms: 9.7, PrefixCacheHitRate: 0.62},
				Uncalibrated: plan.Latencies{ITLP95Ms: 7.1, TTFTP95Ms: 200}, Calibrated: plan.Latencies{ITLP95Ms: 9.5, TTFTP95Ms: 310, PrefixCacheHitRate: 0.645}, CalibratedError: pf(0.031)},
			{Users: 80, Why: "the flag", HeldBack: true, Params: map[string]any{"max-num-seqs": 64}, Live: plan.Latencies{TTFTP50Ms: 90, TTFTP95Ms: 700, ITLP95Ms: 19.2, Settling: true},
				Calibrated: plan.Latencies{ITLP95Ms: 20.1, TTFTP95Ms: 650}, CalibratedError: pf(0.083)}},
		Verified:      []plan.VerifyPoint{{Users: 80, Trial: 3, Predicted: plan.Latencies{Pass: true, ITLP95Ms: 21.3, TTFTP95Ms: 800}, Measured: plan.Latencies{Pass: false, ITLP95Ms: 26.4, TTFTP95Ms: 900}}},
		EngineSeconds: map[string]float64{"probe": 23.4, "verify": 15.1, "sweep": 23}, EngineStarts: map[string]int{"probe": 2, "verify": 1, "sweep": 0}}
	html := render(t, d)
	for _, want := range []string{`<section id="fidelity">`, "Fidelity: multi", "compute ×1.234, memory ×1.456", "held-back probe", "8.3%", "built-in model 41",
		"ITL p95 7.1 ms", "ITL p95 9.5 ms", "pass (ITL p95 21.3 ms", "fail (ITL p95 26.4 ms", "<td>no</td>", "<td class=\"l\">probe</td><td>23.4</td><td>2</td>",
		"predicted ceiling of 80 users", "top 2 configurations", "Final ceiling: 78 users (live", "kept trial #3", "no: held at its start",
		"max-num-seqs=64", "not seen by the fit", "ITL p95: predicted vs measured", "TTFT p95: predicted vs measured", "predicted = measured",
		"probe 2, 80 users, max-num-seqs=64: measured 19.2 ms, predicted 20.1 ms",
		"<td>62.0% / 64.5%</td>", "<td>none reported / 0.0%</td>", "90 / 700 ms (still settling)", "prefix-cache hits live / simulated"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// the charts are inline SVG: no script, nothing fetched
	sec := html[strings.Index(html, `<section id="fidelity">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	if strings.Contains(sec, "<script") || strings.Contains(sec, "src=") || strings.Count(sec, "<svg") != 2 {
		t.Errorf("the fidelity section has %d inline charts, or loads something", strings.Count(sec, "<svg"))
	}
	var md strings.Builder
	if err := report.Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Fidelity: multi", "| compute | ×1.234 | yes |", "| step_seconds | +0.00 ms | no: held at its start |",
		"| 2 | 80 | max-num-seqs=64 | 90 / 700 ms (still settling) |", "| 62.0% / 64.5% |", "| 0 | trial #3 | 80 | pass (ITL p95 21.3 ms, TTFT p95 800 ms) | fail (ITL p95 26.4 ms, TTFT p95 900 ms) | no |",
		"| probe | 23.4 | 2 |", "Final ceiling: 78 users (live", "8.3% on the held-back probe"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// A multi plan whose replay failed has no fit errors: the report prints
// "–" with the reason and summary.json null, never "0.0 %".
func TestFidelityAbsentErrors(t *testing.T) {
	d := fixture(t)
	const why = "the simulator could not replay run 1 (44 users, max-num-seqs=256): sim: bad flags"
	d.Fidelity = &plan.FidelityReport{Mode: plan.FidelityMulti, PredictedCeiling: 80,
		Correction: &sim.Correction{Compute: 1, Memory: 1},
		Fit:        &plan.FitReport{Metrics: []string{"itl_p95"}, ErrorsAbsent: why},
		Probes: []plan.ProbePoint{{Users: 44, Why: "light load", Params: map[string]any{"max-num-seqs": 256},
			Live: plan.Latencies{TTFTP95Ms: 300, ITLP95Ms: 9.7}, ErrorAbsent: why}}}
	html := render(t, d)
	sec := html[strings.Index(html, `<section id="fidelity">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	if strings.Contains(sec, " 0.0%") || strings.Contains(sec, "(error 0.0") {
		t.Errorf("the fidelity section prints 0.0 %% for an error that was not computed:\n%s", sec)
	}
	for _, want := range []string{"built-in model –, fitted –", "absent: " + why, "– (" + why + ")"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the fidelity section does not say %q", want)
		}
	}
	var js strings.Builder
	if err := report.JSON(&js, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"uncalibrated_rms_relative_error": null`, `"fitted_rms_relative_error": null`, `"calibrated_rms_relative_error": null`, `"errors_absent": "` + why} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("summary.json has no %s", want)
		}
	}
}
