package plan

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spoc-project/spoc/capacity"
)

// verifyCandidate is one configuration verify runs live: a top-k
// candidate of the calibrated search, with the calibrated simulator's
// ceiling for it.
type verifyCandidate struct {
	trial                                int
	params                               map[string]any
	predicted, predictedFail, resolution int
	// aim is where the live runs go: the predicted ceiling, or the
	// largest count the simulator found within the SLA on too few
	// samples to judge when it judged none (SweepResult.AimUsers)
	aim int
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
		predictedFail: m.predictedFail, resolution: m.resolution, aim: m.aim}}
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
		res, err := capacity.SweepConfig(ctx, m.simEv, c.Params, p.s.Windows.Sweep.At, capacity.CandidateSweepOptions(p.s.Setup), nil)
		if err != nil {
			return nil, fmt.Errorf("simulated sweep of candidate %s: %w", trialName(c.Trial), err)
		}
		out = append(out, &verifyCandidate{trial: c.Trial, params: c.Params, predicted: res.Ceiling, predictedFail: res.FirstFailing, resolution: max(res.Resolution, 1), aim: res.AimUsers()})
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
			overhead, _ := p.s.Fidelity.runOverhead()
			next := float64(2*len(cands)+2) * (max(w.Ramp, w.Warmup) + w.Duration + overhead).Seconds()
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
	aim := max(c.aim, c.predicted, 1)
	above := aim + c.resolution
	if c.predictedFail > aim {
		above = c.predictedFail
	}
	agreeAll := true
	for _, u := range []int{aim, above} {
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
		p.logf("   verify %s %3d users: predicted %s (ITL p95 %.1f ms), live %s (ITL p95 %.1f ms)", trialName(c.trial), u, evaluationWord(pred), vp.Predicted.ITLP95Ms, evaluationWord(live), vp.Measured.ITLP95Ms)
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
		m.predicted, m.predictedFail, m.resolution, m.aim = pick.predicted, pick.predictedFail, pick.resolution, pick.aim
	}
	m.rep.PredictedCeiling = m.predicted
	kept := pick.trial
	m.rep.KeptTrial = &kept
	return fmt.Sprintf("%s; kept %s (largest count passed live %d, predicted ceiling %d)", detail, trialName(pick.trial), pick.bestPass, pick.predicted)
}
