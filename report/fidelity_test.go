package report_test

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
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
	d.Fidelity = &plan.FidelityReport{Mode: plan.FidelityMulti, PredictedCeiling: 80, LiveEngineSeconds: 61.5, GPUHours: 0.0171,
		Correction:    &sim.Correction{Compute: 1.234, Memory: 1.456},
		Fit:           &plan.FitReport{Metrics: []string{"itl_p95"}, UncalibratedError: 0.41, FittedError: 0.062, HeldBackError: &held},
		Probes:        []plan.ProbePoint{{Users: 44, Why: "light load", Live: plan.Latencies{TTFTP50Ms: 62, ITLP95Ms: 9.7}, Uncalibrated: plan.Latencies{ITLP95Ms: 7.1}, Calibrated: plan.Latencies{ITLP95Ms: 9.5}}},
		Verified:      []plan.VerifyPoint{{Users: 80, Predicted: plan.Latencies{Pass: true, ITLP95Ms: 21.3}, Measured: plan.Latencies{Pass: false, ITLP95Ms: 26.4}}},
		EngineSeconds: map[string]float64{"probe": 23.4, "verify": 15.1, "sweep": 23}}
	html := render(t, d)
	for _, want := range []string{`<section id="fidelity">`, "Fidelity: multi", "compute ×1.234, memory ×1.456", "held-back probe 8.3", "built-in model 41",
		"ITL p95 7.1 ms", "ITL p95 9.5 ms", "pass (ITL p95 21.3 ms", "fail (ITL p95 26.4 ms", "<td>no</td>", "<td class=\"l\">probe</td><td>23.4</td>", "predicted ceiling of 80 users"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
