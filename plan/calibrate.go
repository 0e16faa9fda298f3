package plan

import (
	"context"
	"fmt"

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
	var seen []int
	for i := range m.runs {
		if i != m.heldBack {
			seen = append(seen, i)
		}
	}
	if e, ok := p.fitError(ctx, start, seen, &fit.Evaluations); ok {
		fit.UncalibratedError = e
	}
	c, terms, err := p.fitCorrection(ctx, start, seen, &fit.Evaluations)
	if err != nil {
		return "", err
	}
	fit.Terms = terms
	if e, ok := p.fitError(ctx, c, seen, &fit.Evaluations); ok {
		fit.FittedError = e
	}
	var heldPrediction Latencies
	if m.heldBack >= 0 {
		hb := c
		fit.HeldBackCorrection = &hb
		r := m.runs[m.heldBack]
		m.csim.set(c)
		if ev, err := m.simEv.Evaluate(ctx, r.params, r.load, capacity.Outputs{}); err == nil {
			heldPrediction = latencies(ev)
			if e, ok := relativeError(heldPrediction, r.live); ok {
				fit.HeldBackError = &e
			}
		}
		fit.Evaluations++
		if c, terms, err = p.fitCorrection(ctx, c, seq(len(m.runs)), &fit.Evaluations); err != nil {
			return "", err
		}
		fit.Terms = terms
	}
	m.csim.set(c)
	m.rep.Correction, m.rep.Fit = &c, fit
	for i := range m.rep.Probes {
		pr := m.runs[i]
		pp := &m.rep.Probes[i]
		if ev, err := m.simEv.Evaluate(ctx, pr.params, pr.load, capacity.Outputs{}); err == nil {
			pp.Calibrated = latencies(ev)
		}
		if i == m.heldBack {
			// what the fit that did not see it predicted
			pp.Calibrated = heldPrediction
		}
		m.csim.set(start)
		if ev, err := m.simEv.Evaluate(ctx, pr.params, pr.load, capacity.Outputs{}); err == nil {
			pp.Uncalibrated = latencies(ev)
		}
		m.csim.set(c)
		if e, ok := relativeError(pp.Uncalibrated, pp.Live); ok {
			pp.UncalibratedError = e
		}
		if e, ok := relativeError(pp.Calibrated, pp.Live); ok {
			pp.CalibratedError = e
		}
	}
	held := "no held-back probe"
	if fit.HeldBackError != nil {
		held = fmt.Sprintf("held-back probe %.1f%%", 100**fit.HeldBackError)
	}
	return fmt.Sprintf("correction %s; RMS relative error %.1f%% uncalibrated → %.1f%% fitted; %s (%d replays)",
		DescribeCorrection(c, fit.Terms), 100*fit.UncalibratedError, 100*fit.FittedError, held, fit.Evaluations), nil
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
