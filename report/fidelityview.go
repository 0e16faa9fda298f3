package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/plan"
)

// The fidelity section has its own template block and renderer: it reads
// plan.Summary.Fidelity and nothing else.

//go:embed fidelity.html.tmpl
var fidelityHTML string

var _ = template.Must(pageTemplate.Funcs(template.FuncMap{"fidelityView": newFidelityView}).Parse(fidelityHTML))

// fidelityView is the fidelity section with every figure formatted.
type fidelityView struct {
	Mode, Lead, Final   string
	Correction, Errors  string
	Terms               []fidelityTermView
	Probes              []fidelityProbeView
	Verified            []fidelityVerifyView
	ITLChart, TTFTChart template.HTML
	Phases              []fidelityPhaseView
	Totals              string
}

type fidelityTermView struct{ Name, Value, Identified, Rise string }

type fidelityProbeView struct {
	Users                                                         int
	Flags, LiveTTFT, LiveITL, Hits, Uncalibrated, Calibrated, Why string
}

// hitsText is a probe's prefix-cache hit rate live (the server's own
// count) and in the calibrated simulator's replay of the same run.
func hitsText(p plan.ProbePoint) string {
	live := "none reported"
	if p.Live.PrefixCacheHitRate > 0 {
		live = fmtPct(p.Live.PrefixCacheHitRate)
	}
	if p.CalibratedError == nil && p.ErrorAbsent != "" {
		return live + " / –" // no replay to count them in
	}
	return live + " / " + fmtPct(p.Calibrated.PrefixCacheHitRate)
}

// liveTTFTText is a probe's live TTFT p50 / p95, marked when its window
// was still settling.
func liveTTFTText(p plan.ProbePoint) string {
	s := fmt.Sprintf("%.0f / %.0f ms", p.Live.TTFTP50Ms, p.Live.TTFTP95Ms)
	if p.Live.Settling {
		s += " (still settling)"
	}
	return s
}

type fidelityVerifyView struct {
	Round, Users                       int
	Config, Predicted, Measured, Agree string
}

type fidelityPhaseView struct{ Name, Seconds, Starts string }

func verdictText(l plan.Latencies) string {
	return fmt.Sprintf("%s (ITL p95 %.1f ms, TTFT p95 %.0f ms)", verdictWordOf(l), l.ITLP95Ms, l.TTFTP95Ms)
}

// probeFlags is a probe's flags that differ from the configured ones
// (the probe's own Params are the full set a user would deploy).
func probeFlags(p plan.ProbePoint, configured map[string]any) string {
	diff := map[string]any{}
	for k, v := range p.Params {
		if fmt.Sprint(configured[k]) != fmt.Sprint(v) {
			diff[k] = v
		}
	}
	return flagsText(diff)
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
		v.Lead = fmt.Sprintf("Live probes calibrated the simulator, the search ran in it, the top %d configurations were verified live and the kept one swept live around its predicted ceiling of %d users: %.0f engine-seconds, %.3f GPU-hours; %.0f s in the simulator only.",
			max(f.VerifyTopK, 1), f.PredictedCeiling, f.LiveEngineSeconds, f.GPUHours, f.SimulatedSeconds)
	}
	if f.FinalCeiling > 0 {
		v.Final = fmt.Sprintf("Final ceiling: %d users (%s).", f.FinalCeiling, f.FinalProvenance.String())
		if f.KeptTrial != nil {
			v.Final += fmt.Sprintf(" Live verification kept %s.", trialText(*f.KeptTrial))
		}
	}
	if c := f.Correction; c != nil && f.Fit != nil {
		n := c.Normal()
		v.Correction = fmt.Sprintf("Correction of the cost model: compute ×%.3f, memory ×%.3f, step %+.2f ms (fitted to %s of every probe).",
			n.Compute, n.Memory, 1000*n.StepSeconds, strings.Join(f.Fit.Metrics, ", "))
		v.Errors = fmt.Sprintf("RMS relative error: built-in model %s, fitted %s on the probes it saw", fmtPctOrAbsent(f.Fit.UncalibratedError), fmtPctOrAbsent(f.Fit.FittedError))
		if f.Fit.HeldBackError != nil {
			v.Errors += fmt.Sprintf(", %s on the held-back probe (another flag setting, which the first fit did not see)", fmtPct(*f.Fit.HeldBackError))
		}
		if f.Fit.ErrorsAbsent != "" {
			v.Errors += " (– absent: " + f.Fit.ErrorsAbsent + ")"
		}
		v.Errors += "."
		for _, t := range f.Fit.Terms {
			tv := fidelityTermView{Name: t.Name, Identified: "yes", Rise: fmt.Sprintf("%s for %s", fmtPct(t.Rise), t.Step)}
			if t.Name == "step_seconds" {
				tv.Value = fmt.Sprintf("%+.2f ms", 1000*t.Value)
			} else {
				tv.Value = fmt.Sprintf("×%.3f", t.Value)
			}
			if !t.Identified {
				tv.Identified = "no: held at its start"
			}
			v.Terms = append(v.Terms, tv)
		}
	}
	var configured map[string]any
	for _, p := range f.Probes {
		if len(configured) == 0 && !p.HeldBack {
			configured = p.Params
		}
	}
	for _, p := range f.Probes {
		cal := fmt.Sprintf("ITL p95 %.1f ms (error %s)", p.Calibrated.ITLP95Ms, fmtPctOrAbsent(p.CalibratedError))
		uncal := fmt.Sprintf("ITL p95 %.1f ms (error %s)", p.Uncalibrated.ITLP95Ms, fmtPctOrAbsent(p.UncalibratedError))
		if p.ErrorAbsent != "" && p.CalibratedError == nil && p.UncalibratedError == nil {
			uncal, cal = "–", "– ("+p.ErrorAbsent+")"
		} else if p.ErrorAbsent != "" {
			cal += " (" + p.ErrorAbsent + ")"
		}
		if p.HeldBack {
			cal += ", not seen by the fit"
		}
		v.Probes = append(v.Probes, fidelityProbeView{Users: p.Users, Flags: probeFlags(p, configured), Why: p.Why,
			LiveTTFT: liveTTFTText(p), LiveITL: fmt.Sprintf("%.1f / %.1f ms", p.Live.ITLP50Ms, p.Live.ITLP95Ms), Hits: hitsText(p),
			Uncalibrated: uncal, Calibrated: cal})
	}
	for _, p := range f.Verified {
		agree := "yes"
		if !p.Agree {
			agree = "no"
		}
		v.Verified = append(v.Verified, fidelityVerifyView{Round: p.Round, Users: p.Users, Config: trialText(p.Trial),
			Predicted: verdictText(p.Predicted), Measured: verdictText(p.Measured), Agree: agree})
	}
	if len(f.Probes)+len(f.Verified) > 0 {
		v.ITLChart = parityChart("ITL p95: predicted vs measured", "ms", fidelityParity(f, func(l plan.Latencies) float64 { return l.ITLP95Ms }, "ms"))
		v.TTFTChart = parityChart("TTFT p95: predicted vs measured", "ms", fidelityParity(f, func(l plan.Latencies) float64 { return l.TTFTP95Ms }, "ms"))
	}
	names := make([]string, 0, len(f.EngineSeconds))
	for n := range f.EngineSeconds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s := f.EngineSeconds[n]; s >= 0.05 {
			v.Phases = append(v.Phases, fidelityPhaseView{Name: n, Seconds: fmt.Sprintf("%.1f", s), Starts: fmt.Sprint(f.EngineStarts[n])})
		}
	}
	if f.Mode != plan.FidelitySimulated {
		v.Totals = fmt.Sprintf("Live: %.1f engine-seconds, %.4f GPU-hours (engine-seconds × GPUs). Simulated only: %.1f s of wall time, no engine time.", f.LiveEngineSeconds, f.GPUHours, f.SimulatedSeconds)
	}
	return v
}

// trialText names a configuration by its study trial.
func trialText(n int) string {
	if n < 0 {
		return "the configured flags"
	}
	return fmt.Sprintf("trial #%d", n)
}
