package plan

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/capacity"
)

// choose gives the configured flags and the best front members a
// candidate sweep each — the sweep's windows, repeats and resolution on one
// workload seed, so candidates are ranked at the fidelity of the sweep that
// states the capacity — and keeps the configuration with the highest
// ceiling (or the most throughput at its ceiling, under sweep.choose:
// max-throughput). A tie keeps the earlier candidate: the configured flags
// first, then the study's higher throughput.
func (p *planner) choose(ctx context.Context, ev *capacity.Evaluator, st *searchState) (string, error) {
	sw := p.s.Sweep
	type cand struct {
		trial  int
		params map[string]any
		tput   float64
	}
	var cands []cand
	for _, m := range p.sum.Pareto {
		c := cand{trial: m.Number, params: m.Params}
		if len(m.Values) > 0 {
			c.tput = m.Values[0]
		}
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].tput > cands[j].tput })
	if len(cands) > sw.TopK {
		cands = cands[:sw.TopK]
	}
	// The configured engine flags are always a candidate, and the first, so
	// that a tuned configuration must beat them (a tie keeps the flags the
	// user already runs); their sweep is the baseline phase's.
	cands = append([]cand{{trial: -1, params: map[string]any{}}}, cands...)
	best, bestTput := -1, 0.0
	for n, c := range cands {
		res, err := st.baseline, error(nil)
		if c.trial >= 0 || res == nil {
			// the flags as the final sweep passes them (configured flags
			// plus the trial's), so that the evaluator keys its server the
			// same way and the sweep reuses the chosen candidate's server
			res, err = capacity.CandidateSweep(ctx, ev, withBase(p.s.Deployment.Params, c.params), nil)
		}
		if err != nil {
			if capacity.IsInfeasible(err) {
				p.stepf(n+1, len(cands), false, "candidate %s: infeasible: %v", trialName(c.trial), err)
				continue
			}
			return "", err
		}
		rc := Candidate{Trial: c.trial, Params: withBase(p.s.Deployment.Params, c.params), Ceiling: res.Ceiling, FailedClause: res.FailedClause,
			StudyThroughput: c.tput, Provenance: res.Provenance()}
		p.sum.Candidates = append(p.sum.Candidates, rc)
		p.stepf(n+1, len(cands), false, "candidate %s: ceiling %d users (%s)", trialName(c.trial), res.Ceiling, describeParams(c.params))
		if c.trial >= 0 && (st.bestTuned == nil || res.Ceiling > st.bestTuned.res.Ceiling) {
			st.bestTuned = &tunedCandidate{trial: c.trial, params: c.params, res: res}
		}
		tput := res.CeilingThroughput()
		if best < 0 || better(sw.Choose, rc, p.sum.Candidates[best], tput, bestTput) {
			best, bestTput = len(p.sum.Candidates)-1, tput
		}
	}
	if best < 0 {
		return "", errors.New("no candidate configuration could run")
	}
	p.sum.Candidates[best].Chosen = true
	explainTies(sw.Choose, p.sum.Candidates, best)
	ch := p.sum.Candidates[best]
	p.sum.Capacity.Config = ch.Params
	p.sum.Capacity.ChosenTrial = ch.Trial
	p.sum.Capacity.ChosenBy = sw.Choose
	return fmt.Sprintf("chose %s (candidate-sweep ceiling %d users)", trialName(ch.Trial), ch.Ceiling), nil
}

// explainTies writes on the chosen candidate (index best) and on every
// candidate with the same ceiling how the tie was broken: candidates are
// swept in order (engine.params first, then the study's throughput,
// highest first) and a tie keeps the earlier one. Under max-throughput
// the ceiling decides nothing, so there is no tie to explain.
func explainTies(rule string, cands []Candidate, best int) {
	if rule == "max-throughput" {
		return
	}
	ch := cands[best]
	var tied []string
	for i := range cands {
		c := &cands[i]
		if i == best || c.Ceiling != ch.Ceiling {
			continue
		}
		tied = append(tied, trialName(c.Trial))
		why := "a tie keeps the configured flags"
		if ch.Trial >= 0 {
			why = fmt.Sprintf("a tie goes to the higher study throughput (%.0f vs %.0f tok/s)", ch.StudyThroughput, c.StudyThroughput)
		}
		c.TieBreak = fmt.Sprintf("tied with %s at %d users; not chosen: %s", trialName(ch.Trial), ch.Ceiling, why)
	}
	if len(tied) == 0 {
		return
	}
	why := "a tie keeps the configured flags"
	if ch.Trial >= 0 {
		why = "a tie goes to the higher study throughput"
	}
	cands[best].TieBreak = fmt.Sprintf("chosen on a tie at %d users with %s: %s", ch.Ceiling, strings.Join(tied, ", "), why)
}

// better reports whether a beats b under the choice rule; ties on the
// ceiling go to the earlier candidate (the baseline, then higher study
// throughput).
func better(rule string, a, b Candidate, aTput, bTput float64) bool {
	if rule == "max-throughput" {
		return aTput > bTput
	}
	return a.Ceiling > b.Ceiling
}

func trialName(n int) string {
	if n < 0 {
		return "engine.params (baseline)"
	}
	return fmt.Sprintf("trial #%d", n)
}

func describeParams(m map[string]any) string {
	if len(m) == 0 {
		return "configured flags"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

// withBase is params over the configured engine flags: the full
// configuration a user would deploy.
func withBase(base, params map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range params {
		out[k] = v
	}
	return out
}
