package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"sort"

	"github.com/spoc-project/spoc/plan"
)

// The fidelity section has its own template block and renderer: it reads
// plan.Summary.Fidelity and nothing else.

//go:embed fidelity.html.tmpl
var fidelityHTML string

var _ = template.Must(pageTemplate.Funcs(template.FuncMap{"fidelityView": newFidelityView}).Parse(fidelityHTML))

// fidelityView is the fidelity section with every figure formatted.
type fidelityView struct {
	Mode, Lead, Correction string
	Probes                 []fidelityProbeView
	Verified               []fidelityVerifyView
	Phases                 []fidelityPhaseView
}

type fidelityProbeView struct {
	Users                                                   int
	Flags, LiveTTFT, LiveITL, Uncalibrated, Calibrated, Why string
}

type fidelityVerifyView struct {
	Round, Users               int
	Predicted, Measured, Agree string
}

type fidelityPhaseView struct{ Name, Seconds string }

func verdictText(l plan.Latencies) string {
	v := "fail"
	if l.Pass {
		v = "pass"
	}
	return fmt.Sprintf("%s (ITL p95 %.1f ms, TTFT p95 %.0f ms)", v, l.ITLP95Ms, l.TTFTP95Ms)
}

// newFidelityView returns nil for a summary without the section (plans
// written before it existed).
func newFidelityView(f *plan.FidelityReport) *fidelityView {
	if f == nil {
		return nil
	}
	v := &fidelityView{Mode: f.Mode}
	switch f.Mode {
	case plan.FidelitySimulated:
		v.Lead = "Every number comes from the simulator: no engine time was spent."
	case plan.FidelityLive:
		v.Lead = fmt.Sprintf("Every phase ran live: %.0f engine-seconds, %.3f GPU-hours.", f.LiveEngineSeconds, f.GPUHours)
	default:
		v.Lead = fmt.Sprintf("Live probes calibrated the simulator, the search ran in it, and the chosen configuration was verified and swept live around the predicted ceiling of %d users: %.0f engine-seconds, %.3f GPU-hours; %.0f s in the simulator only.",
			f.PredictedCeiling, f.LiveEngineSeconds, f.GPUHours, f.SimulatedSeconds)
	}
	if c := f.Correction; c != nil && f.Fit != nil {
		n := c.Normal()
		v.Correction = fmt.Sprintf("Correction: compute ×%.3f, memory ×%.3f, step %+.2f ms. RMS relative error of %v: built-in model %s, fitted %s",
			n.Compute, n.Memory, 1000*n.StepSeconds, f.Fit.Metrics, fmtPct(f.Fit.UncalibratedError), fmtPct(f.Fit.FittedError))
		if f.Fit.HeldBackError != nil {
			v.Correction += ", on the held-back probe " + fmtPct(*f.Fit.HeldBackError)
		}
		v.Correction += "."
	}
	for _, p := range f.Probes {
		v.Probes = append(v.Probes, fidelityProbeView{Users: p.Users, Flags: fmt.Sprint(p.Params), Why: p.Why,
			LiveTTFT: fmt.Sprintf("%.0f ms", p.Live.TTFTP50Ms), LiveITL: fmt.Sprintf("%.1f ms", p.Live.ITLP95Ms),
			Uncalibrated: fmt.Sprintf("ITL p95 %.1f ms", p.Uncalibrated.ITLP95Ms), Calibrated: fmt.Sprintf("ITL p95 %.1f ms", p.Calibrated.ITLP95Ms)})
	}
	for _, p := range f.Verified {
		agree := "yes"
		if !p.Agree {
			agree = "no"
		}
		v.Verified = append(v.Verified, fidelityVerifyView{Round: p.Round, Users: p.Users, Predicted: verdictText(p.Predicted), Measured: verdictText(p.Measured), Agree: agree})
	}
	names := make([]string, 0, len(f.EngineSeconds))
	for n := range f.EngineSeconds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s := f.EngineSeconds[n]; s >= 0.05 {
			v.Phases = append(v.Phases, fidelityPhaseView{Name: n, Seconds: fmt.Sprintf("%.1f", s)})
		}
	}
	return v
}
