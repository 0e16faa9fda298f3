package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
)

// correctedSim is the simulator of the configured deployment with the
// correction the calibrate phase fitted. It runs in virtual time only: it
// stands for the real engine in the search, it never serves.
type correctedSim struct {
	*engine.Sim
	mu     sync.Mutex
	c      sim.Correction
	fitted bool
}

var (
	_ engine.Virtual      = (*correctedSim)(nil)
	_ capacity.Calibrated = (*correctedSim)(nil)
)

func (s *correctedSim) set(c sim.Correction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c, s.fitted = c, true
}

// reset puts back c, the correction before any fit: not calibrated.
func (s *correctedSim) reset(c sim.Correction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c, s.fitted = c, false
}

func (s *correctedSim) correction() sim.Correction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// Calibrated reports whether a fitted correction is in place.
func (s *correctedSim) Calibrated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fitted
}

// VirtualDeployment is the simulator's deployment for p, corrected.
func (s *correctedSim) VirtualDeployment(p engine.Params) (sim.Deployment, error) {
	d, err := s.Sim.VirtualDeployment(p)
	if err != nil {
		return d, err
	}
	d.Correction = s.correction()
	return d, nil
}

// Start refuses: the calibrated simulator only runs in virtual time.
func (s *correctedSim) Start(context.Context, engine.Params) (engine.Server, error) {
	return nil, errors.New("the calibrated simulator runs in virtual time only")
}

// newCorrectedSim is the simulator of s's deployment, starting from the
// configured correction (the correction file's, if any).
func newCorrectedSim(s Setup) (*correctedSim, error) {
	l, err := s.simulator()
	if err != nil {
		return nil, err
	}
	return &correctedSim{Sim: l, c: s.Deployment.Sim.Correction}, nil
}

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
	rep                                  *FidelityReport
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

// multiSteps are the phases of a multi plan.
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
		res, err := capacity.SweepConfig(ctx, m.simEv, map[string]any{}, p.s.Windows.Sweep.At, p.s.Sweep.SweepOptions, nil)
		if err != nil {
			return 0, fmt.Errorf("simulated sweep of the configured flags: %w", err)
		}
		return max(res.Ceiling, 1), nil
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
		p.logf("   probe %d: %3d users %-40s TTFT p50 %6.0f ms  ITL p95 %5.1f ms  %s", i+1, users, describeParams(params), pt.Live.TTFTP50Ms, pt.Live.ITLP95Ms, verdictWord(ev.Pass))
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
	w, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	ev, err := p.ev.Evaluate(ctx, params, load, capacity.Outputs{Records: w})
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

// ratio is a/b, 1 when either is not positive.
func ratio(a, b float64) float64 {
	if a > 0 && b > 0 {
		return a / b
	}
	return 1
}

func latencies(ev *capacity.Evaluation) Latencies {
	if ev == nil {
		return Latencies{}
	}
	return latenciesOf(ev.Summary)
}

// latenciesOf is the numbers a probe compares, from a run's result (an
// evaluation's summary, or a records file's); its verdict is the SLA's.
func latenciesOf(res *result.Result) Latencies {
	if res == nil {
		return Latencies{}
	}
	o := res.Overall
	return Latencies{TTFTP50Ms: o.TTFT.P50, ITLP50Ms: o.ITL.P50, TTFTP95Ms: o.TTFT.P95, ITLP95Ms: o.ITL.P95,
		OutputThroughput: o.OutputTokensPerSecond, Pass: res.SLA.Pass, Settling: res.Settling.Flagged, PrefixCacheHitRate: hitRate(o)}
}

// hitRate is the share of st's prompt tokens the server reported cached.
func hitRate(st result.Stats) float64 {
	if st.PromptTokens <= 0 {
		return 0
	}
	return float64(st.CachedTokens) / float64(st.PromptTokens)
}

func verdictWord(pass bool) string {
	if pass {
		return "pass"
	}
	return "FAIL"
}

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
	res, err := capacity.SweepConfig(ctx, m.simEv, p.sum.Capacity.Config, p.s.Windows.Sweep.At, p.s.Sweep.SweepOptions, nil)
	if err != nil {
		return "", fmt.Errorf("simulated sweep of the chosen configuration: %w", err)
	}
	m.predicted, m.resolution, m.predictedFail = res.Ceiling, max(res.Resolution, 1), res.FirstFailing
	m.rep.PredictedCeiling = res.Ceiling
	return fmt.Sprintf("calibrated simulator: chose %s, predicted ceiling %d users (first failing %d)", describeParams(p.sum.Capacity.Config), res.Ceiling, res.FirstFailing), nil
}

// verifyCandidate is one configuration verify runs live: a top-k
// candidate of the calibrated search, with the calibrated simulator's
// ceiling for it.
type verifyCandidate struct {
	trial                                int
	params                               map[string]any
	predicted, predictedFail, resolution int
	// bestPass is the largest verified count that passed live (0: none)
	bestPass int
}

// verifyCandidates are the VerifyTopK configurations verify runs live:
// the calibrated simulator's choice first; then the configured flags when
// they are not the choice (a tuned configuration must beat what the user
// runs today live, as in choose, not only in the simulator); then the
// other candidates by their candidate-sweep ceiling. Each comes with a
// full simulated sweep's prediction (the choice's is searchCalibrated's).
func (p *planner) verifyCandidates(ctx context.Context) ([]*verifyCandidate, error) {
	m := p.m
	k := p.s.Fidelity.verifyTopK()
	m.rep.VerifyTopK = k
	out := []*verifyCandidate{{trial: p.sum.Capacity.ChosenTrial, params: p.sum.Capacity.Config, predicted: m.predicted,
		predictedFail: m.predictedFail, resolution: m.resolution}}
	seen := map[string]bool{describeParams(p.sum.Capacity.Config): true}
	others := append([]Candidate(nil), p.sum.Candidates...)
	sort.SliceStable(others, func(i, j int) bool {
		// the configured flags first, then by ceiling
		if (others[i].Trial < 0) != (others[j].Trial < 0) {
			return others[i].Trial < 0
		}
		return others[i].Ceiling > others[j].Ceiling
	})
	for _, c := range others {
		if len(out) >= k {
			break
		}
		key := describeParams(c.Params)
		if seen[key] || c.Ceiling <= 0 {
			continue
		}
		seen[key] = true
		res, err := capacity.SweepConfig(ctx, m.simEv, c.Params, p.s.Windows.Sweep.At, p.s.Sweep.SweepOptions, nil)
		if err != nil {
			return nil, fmt.Errorf("simulated sweep of candidate %s: %w", trialName(c.Trial), err)
		}
		out = append(out, &verifyCandidate{trial: c.Trial, params: c.Params, predicted: res.Ceiling, predictedFail: res.FirstFailing, resolution: max(res.Resolution, 1)})
	}
	return out, nil
}

// verify runs VerifyTopK configurations (verifyCandidates) live, with
// the sweep's windows, each at its predicted ceiling and at the first
// count the simulator judged failing above it. Live decides among them:
// the one with the largest count that passed live is kept (ties: the
// configured flags, then the simulator's order). When a verdict disagrees with the prediction and
// rounds are left, the verified runs join the fit, the correction is
// refitted and the search runs again. The kept configuration's verified
// runs are levels of the final sweep (same configuration, windows and
// server): it does not run them again.
func (p *planner) verify(ctx context.Context) (string, error) {
	m := p.m
	if m.known == nil {
		m.known, m.knownRecords = map[string]map[int]*capacity.Evaluation{}, map[string]map[int]string{}
	}
	for {
		cands, err := p.verifyCandidates(ctx)
		if err != nil {
			return "", err
		}
		agreeAll := true
		var disagree []int
		// the simulator's choice last: its server stays up for the final
		// sweep when live keeps it
		for i := len(cands) - 1; i >= 0; i-- {
			c := cands[i]
			agree, err := p.verifyOne(ctx, c, &disagree)
			if err != nil {
				return "", err
			}
			agreeAll = agreeAll && agree
		}
		pick := pickVerified(cands)
		if agreeAll {
			return p.keep(cands, pick, fmt.Sprintf("live agrees with the prediction for the top %d (round %d)", len(cands), m.rep.Rounds)), nil
		}
		if b := p.s.Fidelity.Budget; b > 0 && !p.dryRun && m.rep.Rounds < RefitRounds {
			// another round verifies as many points again; the final
			// sweep still needs its levels: refit only while the budget
			// allows
			w := p.s.Windows.Sweep
			next := float64(2*len(cands)+2) * (max(w.Ramp, w.Warmup) + w.Duration + RunOverhead).Seconds()
			if used := p.ev.Usage().Seconds; used+next > b.Seconds() {
				p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Multi-fidelity: live and predicted disagreed at %v users, but plan.budget (%s, %.0f s used) leaves no room for a refit round; the final live sweep decides the ceiling.", disagree, b, used))
				return p.keep(cands, pick, "live and predicted disagree; no budget for a refit round: the final live sweep decides"), nil
			}
		}
		if m.rep.Rounds >= RefitRounds || p.dryRun {
			p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Multi-fidelity: after %d refit round(s) the calibrated simulator still disagreed with live runs at %v users; the final live sweep decides the ceiling.", m.rep.Rounds, disagree))
			return p.keep(cands, pick, "live and predicted still disagree; the final live sweep decides"), nil
		}
		m.rep.Rounds++
		p.logf("   live and predicted disagree: refit with %d live runs and search again (round %d)", len(m.runs), m.rep.Rounds)
		evals := 0
		c, terms, err := p.fitCorrection(ctx, m.csim.correction(), seq(len(m.runs)), &evals)
		if err != nil {
			return "", err
		}
		m.csim.set(c)
		m.rep.Correction = &c
		if m.rep.Fit != nil {
			m.rep.Fit.Evaluations += evals
			m.rep.Fit.Terms = terms
		}
		detail, err := p.searchCalibrated(ctx)
		if err != nil {
			return "", err
		}
		p.logf("   %s", detail)
	}
}

// verifyOne runs c live at its predicted ceiling and at the first count
// the simulator judged failing (runs of the same configuration and count
// verified before are reused) and reports whether every verdict agreed;
// the counts that disagreed are added to disagree.
func (p *planner) verifyOne(ctx context.Context, c *verifyCandidate, disagree *[]int) (bool, error) {
	m := p.m
	key := describeParams(c.params)
	if m.known[key] == nil {
		m.known[key], m.knownRecords[key] = map[int]*capacity.Evaluation{}, map[int]string{}
	}
	above := c.predicted + c.resolution
	if c.predictedFail > c.predicted {
		above = c.predictedFail
	}
	agreeAll := true
	for _, u := range []int{max(c.predicted, 1), above} {
		load := p.s.Windows.Sweep.At(u)
		pred, err := m.simEv.Evaluate(ctx, c.params, load, capacity.Outputs{})
		if err != nil {
			return false, fmt.Errorf("predict %s at %d users: %w", trialName(c.trial), u, err)
		}
		live := m.known[key][u]
		if live == nil {
			rec := filepath.Join("probes", fmt.Sprintf("verify-%d.jsonl", len(m.rep.Verified)+1))
			if live, err = p.evaluateKept(ctx, c.params, load, filepath.Join(p.s.OutDir, rec)); err != nil {
				return false, fmt.Errorf("verify %s at %d users live: %w", trialName(c.trial), u, err)
			}
			m.known[key][u], m.knownRecords[key][u] = live, rec
			m.runs = append(m.runs, liveRun{params: c.params, load: load, live: latencies(live), records: rec, window: measuredWindow(live)})
		}
		vp := VerifyPoint{Round: m.rep.Rounds, Trial: c.trial, Users: u, Params: withBase(p.s.Deployment.Params, c.params),
			Predicted: latencies(pred), Measured: latencies(live), Agree: pred.Pass == live.Pass, Provenance: live.Provenance}
		m.rep.Verified = append(m.rep.Verified, vp)
		if live.Pass {
			c.bestPass = max(c.bestPass, u)
		}
		if !vp.Agree {
			agreeAll = false
			*disagree = append(*disagree, u)
		}
		p.logf("   verify %s %3d users: predicted %s (ITL p95 %.1f ms), live %s (ITL p95 %.1f ms)", trialName(c.trial), u, verdictWord(pred.Pass), vp.Predicted.ITLP95Ms, verdictWord(live.Pass), vp.Measured.ITLP95Ms)
	}
	return agreeAll, nil
}

// pickVerified is the verified configuration live keeps: the one with
// the largest count that passed live; on a tie the configured flags (as in
// choose: a tuned configuration must beat them), else the earlier in the
// simulator's order.
func pickVerified(cands []*verifyCandidate) *verifyCandidate {
	pick := cands[0]
	for _, c := range cands[1:] {
		if c.bestPass > pick.bestPass || c.bestPass == pick.bestPass && c.trial < 0 && pick.trial >= 0 {
			pick = c
		}
	}
	return pick
}

// keep makes pick the plan's configuration (live decided among the
// verified candidates) and returns the phase's detail.
func (p *planner) keep(cands []*verifyCandidate, pick *verifyCandidate, detail string) string {
	return p.kept(cands, pick, detail) + "; " + p.engineSoFar()
}

// kept records pick as the plan's configuration: the summary's chosen
// configuration and candidate, the prediction the final sweep starts
// from, and a note when live overruled the simulator's choice.
func (p *planner) kept(cands []*verifyCandidate, pick *verifyCandidate, detail string) string {
	m := p.m
	if pick != cands[0] {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Multi-fidelity: live verification kept %s (passed %d users live) over the calibrated simulator's choice, %s (passed %d).",
			trialName(pick.trial), pick.bestPass, trialName(cands[0].trial), cands[0].bestPass))
		p.sum.Capacity.Config, p.sum.Capacity.ChosenTrial = pick.params, pick.trial
		for i := range p.sum.Candidates {
			p.sum.Candidates[i].Chosen = describeParams(p.sum.Candidates[i].Params) == describeParams(pick.params)
		}
		m.predicted, m.predictedFail, m.resolution = pick.predicted, pick.predictedFail, pick.resolution
	}
	m.rep.PredictedCeiling = m.predicted
	kept := pick.trial
	m.rep.KeptTrial = &kept
	return fmt.Sprintf("%s; kept %s (largest count passed live %d, predicted ceiling %d)", detail, trialName(pick.trial), pick.bestPass, pick.predicted)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// finalSweep sweeps the chosen configuration live around its predicted
// ceiling instead of from sweep.start: the grid is the verified counts
// (measured already, not run again), then upwards by half again each step
// to sweep.max; the sweep bisects from the last pass to the first failure
// as always, and towards 0 when even the lowest verified count failed.
// The server verify left running for these flags is reused.
func (p *planner) finalSweep(ctx context.Context) (string, error) {
	m := p.m
	known := map[int]capacity.Repeat{}
	var grid []int
	top := 0
	recDir := filepath.Join(p.s.OutDir, stagingRecords)
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return "", err
	}
	key := describeParams(p.sum.Capacity.Config)
	for u, ev := range m.known[key] {
		// the verified run is this level: its records are the level's
		if err := copyFile(filepath.Join(p.s.OutDir, m.knownRecords[key][u]), filepath.Join(recDir, fmt.Sprintf("users-%05d.jsonl", u))); err != nil {
			return "", err
		}
		known[u] = ev.Repeat()
		grid = append(grid, u)
		top = max(top, u)
	}
	for u := top; u < p.s.Sweep.Max; {
		u = min(max(u*3/2, u+1), p.s.Sweep.Max)
		grid = append(grid, u)
	}
	if len(grid) == 0 {
		grid = append(grid, max(m.predicted, 1))
	}
	opts := p.s.Sweep.SweepOptions
	opts.Grid, opts.Known = dedupeSorted(grid), known
	p.logf("   live sweep around the predicted ceiling %d: grid %v (verified levels %d reused), then bisection", m.predicted, opts.Grid, len(known))
	detail, err := p.sweep(ctx, p.ev, opts)
	if err != nil {
		return "", err
	}
	return detail + "; " + p.engineSoFar(), nil
}

// engineSoFar is the plan's engine time so far, against its budget.
func (p *planner) engineSoFar() string {
	used := p.ev.Usage().Seconds
	if b := p.s.Fidelity.Budget; b > 0 {
		return fmt.Sprintf("engine time so far %.0fs of the %s budget", used, b)
	}
	return fmt.Sprintf("engine time so far %.0fs", used)
}

func dedupeSorted(xs []int) []int {
	sort.Ints(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// copyFile copies src to dst (created atomically).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Abort()
		return err
	}
	return out.Close()
}
