package plan

import (
	"context"
	"fmt"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/result"
)

// multiState is what the phases of a multi plan hand each other.
type multiState struct {
	csim  *correctedSim
	simEv *capacity.Evaluator
	// runs are the live evaluations the correction is fitted to (probes,
	// then verified points); heldBack indexes the held-back probe.
	runs     []liveRun
	heldBack int
	// ceiling0 is the uncalibrated simulator's short-sweep ceiling of the
	// configured flags: the probes' loads are fractions of it.
	ceiling0 int
	// predicted is the calibrated ceiling of the chosen configuration and
	// resolution the sweep's step there.
	predicted, resolution, predictedFail int
	// aim is where live runs of the chosen configuration go
	// (SweepResult.AimUsers): the predicted ceiling, or the unconfirmed
	// count when the simulator judged none
	aim int
	// predictedEstimate is the calibrated simulator's capacity estimate
	// of the chosen configuration: it places the final live sweep's
	// refinement (SweepOptions.Prior).
	predictedEstimate *capacity.CapacityEstimate
	rep               *FidelityReport
	// known are the verified live runs by configuration
	// (describeParams) and user count: the kept one's are levels of the
	// final sweep.
	known        map[string]map[int]*capacity.Evaluation
	knownRecords map[string]map[int]string
}

// liveRun is one live run kept for fitting: its configuration, load,
// what it measured, and its records file (relative to the plan's output
// folder; runs.json lists them for spoc sim calibrate --records).
type liveRun struct {
	params  map[string]any
	load    capacity.Load
	live    Latencies
	records string
	// window is the run's measured window: the records' summary is taken
	// over it (the records file holds the warm-up too)
	window result.Window
}

// measuredWindow is the window ev's summary measured.
func measuredWindow(ev *capacity.Evaluation) result.Window {
	if ev == nil || ev.Summary == nil {
		return result.Window{}
	}
	return result.Window{Start: ev.Summary.Window.Start, End: ev.Summary.Window.End}
}

// multiSteps are the phases of a multi plan (docs/fidelity.md): probe
// (probe.go), calibrate (calibrate.go), search in the calibrated simulator
// (correctedsim.go, searchCalibrated below), verify (verify.go) and the
// final live sweep (finalsweep.go).
func (p *planner) multiSteps() []phaseStep {
	return []phaseStep{
		{"workload", p.inspect},
		{"probe", p.probe},
		{"calibrate", p.calibrate},
		{"search", p.searchCalibrated},
		{"verify", p.verify},
		{"sweep", p.finalSweep},
		{"trace", p.trace},
		{"compare", p.compare},
	}
}

// initMulti builds the calibrated simulator beside the live evaluator.
func (p *planner) initMulti() error {
	cs, err := newCorrectedSim(p.s)
	if err != nil {
		return fmt.Errorf("multi plan: simulator of the deployment: %w", err)
	}
	ss := p.s.Setup
	ss.Launcher, ss.Virtual = cs, true
	ev, err := capacity.NewEvaluator(ss, p.o.Logger)
	if err != nil {
		return err
	}
	p.m = &multiState{csim: cs, simEv: ev, heldBack: -1, rep: p.sum.Fidelity}
	return nil
}

// searchCalibrated runs the plan's baseline, study and choice in the
// calibrated simulator and predicts the chosen configuration's ceiling
// with a full simulated sweep.
func (p *planner) searchCalibrated(ctx context.Context) (string, error) {
	m := p.m
	// the simulated study is not the live one: its own name per round
	// and correction, so a later live plan never resumes simulated trials
	c := m.csim.correction()
	st := p.newSearch(fmt.Sprintf("%s-multi-r%d-%s", p.s.Search.Study, m.rep.Rounds, fingerprintID(map[string]string{
		"compute": fmt.Sprint(c.Compute), "memory": fmt.Sprint(c.Memory), "step": fmt.Sprint(c.StepSeconds)})))
	p.sum.Search, p.sum.Pareto, p.sum.Candidates, p.sum.Trials = nil, nil, nil, 0
	for _, ph := range []func(context.Context, *capacity.Evaluator, *searchState) (string, error){p.baselineSweep, p.tune, p.choose} {
		detail, err := ph(ctx, m.simEv, st)
		if err != nil {
			return "", err
		}
		p.logf("   %s", detail)
	}
	// the sweep's own options: with sweep.precision the simulator
	// estimates the capacity too (seconds of CPU), and that estimate
	// places the live refinement
	res, err := capacity.SweepConfig(ctx, m.simEv, p.sum.Capacity.Config, p.s.Windows.Sweep.At, p.s.Sweep.SweepOptions, nil)
	if err != nil {
		return "", fmt.Errorf("simulated sweep of the chosen configuration: %w", err)
	}
	m.predicted, m.resolution, m.predictedFail, m.aim = res.Ceiling, max(res.Resolution, 1), res.FirstFailing, res.AimUsers()
	m.predictedEstimate = res.Estimate
	m.rep.PredictedCeiling, m.rep.PredictedEstimate = res.Ceiling, res.Estimate
	detail := fmt.Sprintf("calibrated simulator: chose %s, predicted ceiling %d users (first failing %d)", describeParams(p.sum.Capacity.Config), res.Ceiling, res.FirstFailing)
	if res.Estimate != nil {
		detail += ", predicted capacity " + EstimateText(res.Estimate)
	}
	return detail, nil
}

// engineSoFar is the plan's engine time so far, against its budget.
func (p *planner) engineSoFar() string {
	used := p.ev.Usage().Seconds
	if b := p.s.Fidelity.Budget; b > 0 {
		return fmt.Sprintf("engine time so far %.0fs of the %s budget", used, b)
	}
	return fmt.Sprintf("engine time so far %.0fs", used)
}

// seq is 0 … n-1: the indices of the runs a fit sees.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
