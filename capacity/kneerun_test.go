package capacity

import (
	"testing"

	"github.com/spoc-project/spoc/result"
)

// A run that failed on a profile that completed nothing carries that
// failure to the estimator, which cannot count it from the clauses'
// samples; a latency failure does not.
func TestKneeRunCarriesTheFailureTheFitCannotCount(t *testing.T) {
	const msg = "P2: no request sent in the measured window completed, 1 outstanding at its end"
	ev := &Evaluation{Users: 32, Summary: &result.Result{}, Verdict: result.Verdict{State: result.VerdictOverloaded, Violations: []result.Violation{
		{Scope: "P2", Clause: result.ClauseOverloaded, Message: msg}}}}
	if k := ev.KneeRun(1); k.Uncounted != msg {
		t.Errorf("Uncounted %q, want %q", k.Uncounted, msg)
	}
	ev.Verdict = result.Verdict{State: result.VerdictFail, Violations: []result.Violation{{Scope: "P0", Clause: "ttft p95", Message: "P0 ttft p95 2.1s > 2s"}}}
	if k := ev.KneeRun(1); k.Uncounted != "" {
		t.Errorf("a latency failure: Uncounted %q, want none", k.Uncounted)
	}
}
