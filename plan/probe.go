package plan

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/internal/atomicfile"
)

// probe runs the configured flags live, then the flag the simulator says
// matters most. The probes are sequential and each aims at the ceiling as
// the simulator predicts it after the probes before it: the first runs at
// ProbeLoads[0] of the uncalibrated simulator's ceiling; after it a quick
// fit corrects the simulator, and the next probes run at ProbeLoads[i] of
// the corrected ceiling (a deployment slower than the model would be
// overloaded past its cliff at the model's ceiling, and a probe there
// measures nothing a fit can use). The flag probe runs at the last
// corrected ceiling and is held back from the calibrate phase's first fit.
// A probe that fails is retried once, then the plan fails: a probe is
// never replaced by a simulated number.
func (p *planner) probe(ctx context.Context) (string, error) {
	m := p.m
	ceiling := func() (int, error) {
		res, err := capacity.SweepConfig(ctx, m.simEv, map[string]any{}, p.s.Windows.Sweep.At, capacity.CandidateSweepOptions(p.s.Setup), nil)
		if err != nil {
			return 0, fmt.Errorf("simulated sweep of the configured flags: %w", err)
		}
		return res.AimUsers(), nil
	}
	c, err := ceiling()
	if err != nil {
		return "", err
	}
	m.ceiling0 = c
	recDir := filepath.Join(p.s.OutDir, "probes")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return "", err
	}
	run := func(users int, params map[string]any, why string, heldBack bool) error {
		i := len(m.rep.Probes)
		load := p.s.Windows.Sweep.At(users)
		rec := filepath.Join("probes", fmt.Sprintf("probe-%d.jsonl", i+1))
		var ev *capacity.Evaluation
		var err error
		attempts := 0
		for attempts < 2 {
			attempts++
			ev, err = p.evaluateKept(ctx, params, load, filepath.Join(p.s.OutDir, rec))
			if err == nil || ctx.Err() != nil {
				break
			}
			p.logf("   probe %d (%d users, %s) failed: %v", i+1, users, describeParams(params), err)
		}
		if err != nil {
			return fmt.Errorf("probe %d at %d users (%s) failed %d times; no simulated number replaces it: %w", i+1, users, describeParams(params), attempts, err)
		}
		if heldBack {
			m.heldBack = len(m.runs)
		}
		m.runs = append(m.runs, liveRun{params: params, load: load, live: latencies(ev), records: rec, window: measuredWindow(ev)})
		pt := ProbePoint{Users: users, Params: withBase(p.s.Deployment.Params, params), Why: why, HeldBack: heldBack,
			Attempts: attempts, Live: latencies(ev), Provenance: ev.Provenance}
		m.rep.Probes = append(m.rep.Probes, pt)
		p.logf("   probe %d: %3d users %-40s TTFT p50 %6.0f ms  ITL p95 %5.1f ms  %s", i+1, users, describeParams(params), pt.Live.TTFTP50Ms, pt.Live.ITLP95Ms, evaluationWord(ev))
		if st := ev.Summary.Settling; st.Flagged {
			// the fit would calibrate the simulator to a start-up transient
			note := fmt.Sprintf("Multi-fidelity: probe %d (%d users) was still settling when its measured window opened, so the correction is fitted to a start-up transient as well as to the deployment: %s.",
				i+1, users, strings.Join(st.Reasons, "; "))
			p.logf("   probe %d: still settling: %d requests in the window's first half, %d in its second", i+1, st.FirstHalf.Requests, st.SecondHalf.Requests)
			p.sum.Notes = append(p.sum.Notes, note)
		}
		return nil
	}
	seen := map[int]bool{}
	for k, f := range ProbeLoads {
		if k > 0 && !p.dryRun {
			// aim at the ceiling as the probes so far correct it
			evals := 0
			corr, _, err := p.fitCorrection(ctx, m.csim.correction(), seq(len(m.runs)), &evals)
			if err != nil {
				return "", err
			}
			m.csim.set(corr)
			if c, err = ceiling(); err != nil {
				return "", err
			}
			p.logf("   after %d probe(s): %s: simulated ceiling %d users", len(m.runs), DescribeCorrection(corr, nil), c)
		}
		u := max(int(math.Round(f*float64(c))), 1)
		if seen[u] {
			continue
		}
		seen[u] = true
		what := "uncalibrated"
		if k > 0 {
			what = "corrected"
		}
		if err := run(u, map[string]any{}, fmt.Sprintf("configured flags at %.0f%% of the %s simulated ceiling", 100*f, what), false); err != nil {
			return "", err
		}
	}
	if name, value, ok := p.mostSensitiveFlag(ctx, c); ok {
		if err := run(c, map[string]any{name: value}, fmt.Sprintf("%s=%v, the flag the simulator says matters most, at the corrected simulated ceiling (held back)", name, value), true); err != nil {
			return "", err
		}
	}
	// calibrate fits from the configured correction again, not from this
	// phase's provisional one
	m.csim.reset(p.s.Deployment.Sim.Correction)
	return fmt.Sprintf("%d live probes (uncalibrated simulated ceiling %d users, corrected %d); %s", len(m.rep.Probes), m.ceiling0, c, p.engineSoFar()), nil
}

// evaluateKept runs params live at load, writing its records to path.
func (p *planner) evaluateKept(ctx context.Context, params map[string]any, load capacity.Load, path string) (*capacity.Evaluation, error) {
	return evaluateTo(ctx, p.ev, params, load, path)
}

// evaluateTo runs params on e at load, writing its records to path
// atomically: a run that fails leaves no file.
func evaluateTo(ctx context.Context, e *capacity.Evaluator, params map[string]any, load capacity.Load, path string) (*capacity.Evaluation, error) {
	w, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	ev, err := e.Evaluate(ctx, params, load, capacity.Outputs{Records: w})
	if err != nil {
		w.Abort()
		return nil, err
	}
	return ev, w.Close()
}

// mostSensitiveFlag evaluates each searched flag at both ends of its range
// in the simulator at users and returns the setting that moves TTFT and
// ITL p95 furthest from the configured flags'.
func (p *planner) mostSensitiveFlag(ctx context.Context, users int) (string, any, bool) {
	load := p.s.Windows.Sweep.At(users)
	ref, err := p.m.simEv.Evaluate(ctx, map[string]any{}, load, capacity.Outputs{})
	if err != nil {
		return "", nil, false
	}
	r := latencies(ref)
	bestName, bestScore := "", 0.0
	var bestValue any
	for _, spec := range p.s.Search.Space {
		var values []any
		switch spec.Type {
		case "int":
			values = []any{int(spec.Low), int(spec.High)}
		case "float":
			values = []any{spec.Low, spec.High}
		default:
			values = spec.Choices
		}
		for _, v := range values {
			ev, err := p.m.simEv.Evaluate(ctx, map[string]any{spec.Name: v}, load, capacity.Outputs{})
			if err != nil {
				continue
			}
			l := latencies(ev)
			score := math.Abs(math.Log(ratio(l.TTFTP95Ms, r.TTFTP95Ms))) + math.Abs(math.Log(ratio(l.ITLP95Ms, r.ITLP95Ms)))
			if score > bestScore {
				bestName, bestValue, bestScore = spec.Name, v, score
			}
		}
	}
	return bestName, bestValue, bestName != ""
}
