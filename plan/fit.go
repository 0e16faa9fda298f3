package plan

import (
	"context"
	"fmt"
	"math"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/perfmodel/calibrate"
	"github.com/spoc-project/spoc/sim"
)

// fitMetrics are what the correction is fitted to: the latencies the SLA
// judges and the output throughput (which an overloaded run that
// completed few requests still measures).
var fitMetrics = []string{"ttft_p50", "ttft_p95", "itl_p50", "itl_p95", "output_throughput"}

// FitEvaluations bounds the objective evaluations of one correction fit
// (each replays every fitted run in the simulator).
const FitEvaluations = 90

// Identification of a fitted term: a term is identified by the runs when
// moving it from the fit by its identification step (either way) raises
// the fit's RMS log error by at least IdentifyRise; otherwise it is held
// at its starting value and the others are fitted again
// (docs/fidelity.md).
const (
	IdentifyRise = 0.01
	// IdentifyMultiplierStep is the relative move of a multiplier (20 %).
	IdentifyMultiplierStep = 0.2
	// IdentifyStepMs is the move of the per-step term in milliseconds.
	IdentifyStepMs = 0.5
)

// correctionTerms are the terms of a sim.Correction the fit moves, in the
// order of the fit's vector: the multipliers in log space, the per-step
// term in milliseconds.
var correctionTerms = []string{"compute", "memory", "step_seconds"}

func termVector(c sim.Correction) []float64 {
	c = c.Normal()
	return []float64{math.Log(c.Compute), math.Log(c.Memory), 1000 * c.StepSeconds}
}

func vectorTerms(x []float64) sim.Correction {
	return sim.Correction{Compute: math.Exp(x[0]), Memory: math.Exp(x[1]), StepSeconds: x[2] / 1000}
}

// FitTerm is one term of the correction as the fit found it: its value,
// and whether the runs identify it (moving it by Step changes the fit's
// RMS log error by Rise; below IdentifyRise it is held at its start).
type FitTerm struct {
	Name       string  `json:"name"`
	Value      float64 `json:"value"`
	Identified bool    `json:"identified"`
	Step       string  `json:"step"`
	Rise       float64 `json:"rms_log_error_rise"`
}

// pairs are the simulated and live values of fitMetrics with both sides
// measured (a run without completed requests has no latencies).
func pairs(simulated, live Latencies) [][2]float64 {
	var out [][2]float64
	for _, pr := range [][2]float64{{simulated.TTFTP50Ms, live.TTFTP50Ms}, {simulated.TTFTP95Ms, live.TTFTP95Ms},
		{simulated.ITLP50Ms, live.ITLP50Ms}, {simulated.ITLP95Ms, live.ITLP95Ms}, {simulated.OutputThroughput, live.OutputThroughput}} {
		if pr[0] > 0 && pr[1] > 0 {
			out = append(out, pr)
		}
	}
	return out
}

// relativeError is the RMS relative error of simulated against live over
// fitMetrics; false when nothing could be compared.
func relativeError(simulated, live Latencies) (float64, bool) {
	var sum float64
	ps := pairs(simulated, live)
	for _, pr := range ps {
		e := pr[0]/pr[1] - 1
		sum += e * e
	}
	if len(ps) == 0 {
		return 0, false
	}
	return math.Sqrt(sum / float64(len(ps))), true
}

// replay runs the live runs idx in the simulator with correction c and
// calls fn with each pair of values; an error names the run whose replay
// failed.
func (p *planner) replay(ctx context.Context, c sim.Correction, idx []int, evals *int, fn func(pr [2]float64)) error {
	m := p.m
	prev := m.csim.correction()
	m.csim.set(c)
	defer m.csim.set(prev)
	for _, i := range idx {
		r := m.runs[i]
		ev, err := m.simEv.Evaluate(ctx, r.params, r.load, capacity.Outputs{})
		*evals++
		if err != nil {
			return fmt.Errorf("the simulator could not replay run %d (%d users, %s): %w", i+1, r.load.Users, describeParams(r.params), err)
		}
		for _, pr := range pairs(latencies(ev), r.live) {
			fn(pr)
		}
	}
	return nil
}

// fitError is the RMS relative error of the simulator with c against the
// live runs idx over fitMetrics, or nil and why it could not be computed.
func (p *planner) fitError(ctx context.Context, c sim.Correction, idx []int, evals *int) (*float64, string) {
	var sum float64
	n := 0
	if err := p.replay(ctx, c, idx, evals, func(pr [2]float64) {
		e := pr[0]/pr[1] - 1
		sum += e * e
		n++
	}); err != nil {
		return nil, err.Error()
	}
	if n == 0 {
		return nil, "no latency was measured both live and in the simulator"
	}
	e := math.Sqrt(sum / float64(n))
	return &e, ""
}

// HuberLogError is where the fit's loss turns from squared to linear in
// the log error (0.3: about 35 %). A live p95 at a queueing knee can be
// off by a factor of three on one run of a loaded machine (a server that
// stalls once); past this a residual pulls the fit linearly, not
// quadratically, so one such run does not decide the correction.
const HuberLogError = 0.3

// huber is the Huber loss of a log error d.
func huber(d float64) float64 {
	if a := math.Abs(d); a > HuberLogError {
		return 2*HuberLogError*a - HuberLogError*HuberLogError
	}
	return d * d
}

// logError is the fit's objective: the mean Huber loss of the log errors
// of the simulator with c against the live runs idx (+Inf when a replay
// failed).
func (p *planner) logError(ctx context.Context, c sim.Correction, idx []int, evals *int) float64 {
	if c.Validate() != nil {
		return math.Inf(1)
	}
	var sum float64
	n := 0
	if p.replay(ctx, c, idx, evals, func(pr [2]float64) {
		sum += huber(math.Log(pr[0] / pr[1]))
		n++
	}) != nil || n == 0 {
		return math.Inf(1)
	}
	return sum / float64(n)
}

// fitCorrection fits the three terms of the correction (compute and memory
// multipliers in log space, the per-step term in milliseconds) to the live
// runs idx by Nelder–Mead from start, minimising the mean Huber loss of
// the log errors of fitMetrics. It then checks that the runs identify each term
// (identify) and, when some are not, holds them at their start values and
// fits the others again, once: a term the runs cannot see is not given a
// value they did not measure.
func (p *planner) fitCorrection(ctx context.Context, start sim.Correction, idx []int, evals *int) (sim.Correction, []FitTerm, error) {
	free := []bool{true, true, true}
	x0 := termVector(start)
	x, err := p.fitFree(ctx, x0, free, idx, evals)
	if err != nil {
		return sim.Correction{}, nil, err
	}
	terms := p.identify(ctx, x, free, idx, evals)
	refit := false
	for i, t := range terms {
		if !t.Identified {
			free[i], refit = false, true
			x[i] = x0[i]
		}
	}
	if refit {
		if x, err = p.fitFree(ctx, x, free, idx, evals); err != nil {
			return sim.Correction{}, nil, err
		}
	}
	c := vectorTerms(x)
	if err := c.Validate(); err != nil {
		return sim.Correction{}, nil, fmt.Errorf("fit the correction: %w", err)
	}
	for i := range terms {
		terms[i].Value = []float64{c.Compute, c.Memory, c.StepSeconds}[i]
	}
	return c, terms, nil
}

// fitFree minimises the log error over the free terms of x0.
func (p *planner) fitFree(ctx context.Context, x0 []float64, free []bool, idx []int, evals *int) ([]float64, error) {
	var pos []int
	var y0 []float64
	for i, f := range free {
		if f {
			pos = append(pos, i)
			y0 = append(y0, x0[i])
		}
	}
	x := append([]float64(nil), x0...)
	if len(pos) == 0 {
		return x, nil
	}
	full := func(y []float64) []float64 {
		v := append([]float64(nil), x0...)
		for j, i := range pos {
			v[i] = y[j]
		}
		return v
	}
	objective := func(y []float64) float64 { return p.logError(ctx, vectorTerms(full(y)), idx, evals) }
	y, _, _, err := calibrate.NelderMead(ctx, objective, y0, 0.3, 1e-4, FitEvaluations)
	if err != nil {
		return nil, fmt.Errorf("fit the correction: %w", err)
	}
	return full(y), nil
}

// identify moves each term of the fitted x by its identification step in
// both directions and reports how much the RMS log error rises at the
// smaller of the two moves.
func (p *planner) identify(ctx context.Context, x []float64, free []bool, idx []int, evals *int) []FitTerm {
	f0 := math.Sqrt(p.logError(ctx, vectorTerms(x), idx, evals))
	terms := make([]FitTerm, len(correctionTerms))
	for i, name := range correctionTerms {
		d, step := math.Log1p(IdentifyMultiplierStep), fmt.Sprintf("±%.0f %%", 100*IdentifyMultiplierStep)
		if name == "step_seconds" {
			d, step = IdentifyStepMs, fmt.Sprintf("±%.1f ms", IdentifyStepMs)
		}
		terms[i] = FitTerm{Name: name, Step: step}
		if !free[i] {
			continue
		}
		rise := math.Inf(1)
		for _, sgn := range []float64{-1, 1} {
			y := append([]float64(nil), x...)
			y[i] += sgn * d
			rise = math.Min(rise, math.Sqrt(p.logError(ctx, vectorTerms(y), idx, evals))-f0)
		}
		terms[i].Rise, terms[i].Identified = rise, rise >= IdentifyRise
	}
	return terms
}
