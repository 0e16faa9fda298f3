package plan

import (
	"strings"
	"testing"
)

// Live decides among the verified configurations: the one with the
// largest count that passed live is kept, a tie keeps the configured
// flags, then the simulator's order, and when live overrules the
// simulator's choice the summary's configuration, chosen candidate,
// prediction and notes follow.
func TestLiveDecidesAmongVerified(t *testing.T) {
	choice := &verifyCandidate{trial: 4, params: map[string]any{"max-num-batched-tokens": 8192}, predicted: 80, predictedFail: 88, resolution: 8, bestPass: 80}
	runnerUp := &verifyCandidate{trial: 7, params: map[string]any{"max-num-batched-tokens": 2048}, predicted: 72, predictedFail: 80, resolution: 8, bestPass: 80}
	if got := pickVerified([]*verifyCandidate{choice, runnerUp}); got != choice {
		t.Errorf("a tie kept trial %d, want the simulator's choice", got.trial)
	}
	configured := &verifyCandidate{trial: -1, params: map[string]any{}, predicted: 72, bestPass: 80}
	if got := pickVerified([]*verifyCandidate{choice, configured, runnerUp}); got != configured {
		t.Errorf("a tie with the configured flags kept trial %d, want the configured flags", got.trial)
	}
	runnerUp.bestPass = 88
	if got := pickVerified([]*verifyCandidate{choice, configured, runnerUp}); got != runnerUp {
		t.Errorf("kept trial %d, want the one that passed 88 users live", got.trial)
	}

	p := &planner{sum: &Summary{Candidates: []Candidate{
		{Trial: 4, Params: choice.params, Ceiling: 80, Chosen: true},
		{Trial: 7, Params: runnerUp.params, Ceiling: 72},
	}}, m: &multiState{predicted: 80, predictedFail: 88, resolution: 8, rep: &FidelityReport{}}}
	p.sum.Capacity.Config, p.sum.Capacity.ChosenTrial = choice.params, 4
	detail := p.kept([]*verifyCandidate{choice, runnerUp}, runnerUp, "verified")
	if p.sum.Capacity.ChosenTrial != 7 || p.sum.Capacity.Config["max-num-batched-tokens"] != 2048 {
		t.Errorf("chosen %d %v, want trial 7", p.sum.Capacity.ChosenTrial, p.sum.Capacity.Config)
	}
	if p.sum.Candidates[0].Chosen || !p.sum.Candidates[1].Chosen {
		t.Errorf("candidates %+v: want trial 7 marked chosen", p.sum.Candidates)
	}
	if p.m.predicted != 72 || p.m.predictedFail != 80 || p.m.rep.PredictedCeiling != 72 || p.m.rep.KeptTrial == nil || *p.m.rep.KeptTrial != 7 {
		t.Errorf("prediction %d/%d, report %d kept %v: want trial 7's", p.m.predicted, p.m.predictedFail, p.m.rep.PredictedCeiling, p.m.rep.KeptTrial)
	}
	if len(p.sum.Notes) != 1 || !strings.Contains(p.sum.Notes[0], "kept trial #7 (passed 88 users live) over the calibrated simulator's choice, trial #4 (passed 80)") {
		t.Errorf("notes %q", p.sum.Notes)
	}
	if !strings.Contains(detail, "kept trial #7") {
		t.Errorf("detail %q", detail)
	}
	// keeping the simulator's choice changes nothing and says nothing
	p = &planner{sum: &Summary{}, m: &multiState{predicted: 80, rep: &FidelityReport{}}}
	p.sum.Capacity.Config, p.sum.Capacity.ChosenTrial = choice.params, 4
	p.kept([]*verifyCandidate{choice, runnerUp}, choice, "verified")
	if p.sum.Capacity.ChosenTrial != 4 || len(p.sum.Notes) != 0 || p.m.rep.PredictedCeiling != 80 {
		t.Errorf("keeping the choice: trial %d, notes %q, predicted %d", p.sum.Capacity.ChosenTrial, p.sum.Notes, p.m.rep.PredictedCeiling)
	}
}
