package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/sim"
)

// calibrate fits the correction to the probes: first without the held-back
// probe (to measure the error on a run the fit did not see), then to all.
func (p *planner) calibrate(ctx context.Context) (string, error) {
	m := p.m
	// no live run until verify: a server left up would idle on its GPUs
	// through the fit and the search, and count as engine time
	if p.ev != nil {
		if err := p.ev.Close(ctx); err != nil {
			return "", err
		}
	}
	if p.dryRun {
		m.csim.set(m.csim.correction())
		return "dry run: no fit", nil
	}
	start := m.csim.correction()
	fit := &FitReport{Metrics: fitMetrics}
	// a run the simulator cannot replay is left out of the fit: its
	// errors are absent, with the reason, never a perfect 0
	failed := p.unreplayable(ctx, start, &fit.Evaluations)
	var seen, all []int
	var why []string
	for i := range m.runs {
		if failed[i] != "" {
			why = append(why, failed[i])
			continue
		}
		all = append(all, i)
		if i != m.heldBack {
			seen = append(seen, i)
		}
	}
	if len(seen) == 0 {
		return "", fmt.Errorf("calibrate: no live run to fit the correction to: %s", strings.Join(why, "; "))
	}
	var reason string
	if fit.UncalibratedError, reason = p.fitError(ctx, start, seen, &fit.Evaluations); reason != "" {
		why = append(why, "built-in model: "+reason)
	}
	c, terms, err := p.fitCorrection(ctx, start, seen, &fit.Evaluations)
	if err != nil {
		return "", err
	}
	fit.Terms = terms
	if fit.FittedError, reason = p.fitError(ctx, c, seen, &fit.Evaluations); reason != "" {
		why = append(why, "fitted: "+reason)
	}
	var heldPrediction Latencies
	heldReason := ""
	if m.heldBack >= 0 && failed[m.heldBack] == "" {
		hb := c
		fit.HeldBackCorrection = &hb
		r := m.runs[m.heldBack]
		m.csim.set(c)
		if ev, err := m.simEv.Evaluate(ctx, r.params, r.load, capacity.Outputs{}); err == nil {
			heldPrediction = latencies(ev)
			if e, ok := relativeError(heldPrediction, r.live); ok {
				fit.HeldBackError = &e
			} else {
				heldReason = "no latency of the held-back probe was measured both live and in the simulator"
			}
		} else {
			heldReason = "the simulator could not replay the held-back probe: " + err.Error()
		}
		fit.Evaluations++
		if c, terms, err = p.fitCorrection(ctx, c, all, &fit.Evaluations); err != nil {
			return "", err
		}
		fit.Terms = terms
	}
	if heldReason != "" {
		why = append(why, heldReason)
	}
	fit.ErrorsAbsent = strings.Join(why, "; ")
	m.csim.set(c)
	m.rep.Correction, m.rep.Fit = &c, fit
	for i := range m.rep.Probes {
		pr := m.runs[i]
		pp := &m.rep.Probes[i]
		if failed[i] != "" {
			pp.ErrorAbsent = failed[i]
			continue
		}
		var absent []string
		if ev, err := m.simEv.Evaluate(ctx, pr.params, pr.load, capacity.Outputs{}); err == nil {
			pp.Calibrated = latencies(ev)
		} else {
			absent = append(absent, "calibrated replay: "+err.Error())
		}
		if i == m.heldBack {
			// what the fit that did not see it predicted
			pp.Calibrated = heldPrediction
		}
		m.csim.set(start)
		if ev, err := m.simEv.Evaluate(ctx, pr.params, pr.load, capacity.Outputs{}); err == nil {
			pp.Uncalibrated = latencies(ev)
		} else {
			absent = append(absent, "uncalibrated replay: "+err.Error())
		}
		m.csim.set(c)
		if e, ok := relativeError(pp.Uncalibrated, pp.Live); ok {
			pp.UncalibratedError = &e
		}
		if e, ok := relativeError(pp.Calibrated, pp.Live); ok {
			pp.CalibratedError = &e
		}
		if len(absent) == 0 && (pp.UncalibratedError == nil || pp.CalibratedError == nil) {
			absent = append(absent, "no latency was measured both live and in the simulator")
		}
		pp.ErrorAbsent = strings.Join(absent, "; ")
	}
	held := "no held-back probe"
	if fit.HeldBackError != nil {
		held = fmt.Sprintf("held-back probe %s", PercentOrAbsent(fit.HeldBackError))
	} else if heldReason != "" {
		held = "held-back probe –"
	}
	detail := fmt.Sprintf("correction %s; RMS relative error %s uncalibrated → %s fitted; %s (%d replays)",
		DescribeCorrection(c, fit.Terms), PercentOrAbsent(fit.UncalibratedError), PercentOrAbsent(fit.FittedError), held, fit.Evaluations)
	if fit.ErrorsAbsent != "" {
		detail += "; absent: " + fit.ErrorsAbsent
	}
	return detail, nil
}

// unreplayable replays every live run in the simulator with c and returns,
// by run, why the ones that failed did (the others are absent).
func (p *planner) unreplayable(ctx context.Context, c sim.Correction, evals *int) map[int]string {
	failed := map[int]string{}
	for i := range p.m.runs {
		if err := p.replay(ctx, c, []int{i}, evals, func([2]float64) {}); err != nil {
			failed[i] = err.Error()
		}
	}
	return failed
}

// PercentOrAbsent is a relative error in per cent with one decimal, or
// "–" when it is absent (nil: it could not be computed).
func PercentOrAbsent(e *float64) string {
	if e == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100**e)
}

// DescribeCorrection is the correction in words, each term marked when the
// runs did not identify it (held at its start value).
func DescribeCorrection(c sim.Correction, terms []FitTerm) string {
	held := map[string]bool{}
	for _, t := range terms {
		held[t.Name] = !t.Identified
	}
	mark := func(name string) string {
		if held[name] {
			return " (not identified: held)"
		}
		return ""
	}
	c = c.Normal()
	return fmt.Sprintf("compute ×%.3f%s, memory ×%.3f%s, step %+.2f ms%s", c.Compute, mark("compute"), c.Memory, mark("memory"), 1000*c.StepSeconds, mark("step_seconds"))
}
