package capacity

import (
	"math"

	"github.com/spoc-project/spoc/result"
)

// Reasons a run is left out of the capacity estimate.
const (
	// ExcludedClientBound: the load client could not keep the schedule,
	// so the run measured the client as well as the server.
	ExcludedClientBound = "client-bound"
	// ExcludedSettling: the run's measured window was still settling
	// (result.SettlingReport): a start-up transient, not the steady state
	// the capacity is defined by.
	ExcludedSettling = "still settling"
	// ExcludedNoSamples: the window held no latency sample to count.
	ExcludedNoSamples = "no samples"
)

// KneeRun reduces ev, a run with workload seed index seed, to what the
// capacity estimator reads: each SLA latency clause's samples and samples
// over its limit in the verdict's scopes (every profile under a
// per-profile SLA, else overall), the worst clause's margin, and why the
// run is left out, if it is.
func (ev *Evaluation) KneeRun(seed int) KneeRun {
	k := KneeRun{Users: ev.Users, Seed: seed, Pass: ev.Pass, Margin: InfFloat(math.Inf(1))}
	s := ev.Summary
	if s == nil {
		k.Excluded = ExcludedNoSamples
		return k
	}
	scopes := []result.Stats{s.Overall}
	if ev.Verdict.Scope == result.SLAScopePerProfile && len(s.Profiles) > 0 {
		scopes = s.Profiles
	}
	overloaded := ev.Verdict.Outcome() == result.VerdictOverloaded
	worst := math.Inf(-1)
	var samples int64
	for _, st := range scopes {
		for _, x := range st.Exceedance {
			k.Clauses = append(k.Clauses, ClauseCount{Scope: st.Name, Clause: x.Clause, Allowance: x.Allowance(), Samples: x.Samples, Over: x.Over})
			samples += x.Samples
			if v, ok := s.ClauseValue(st.Name, x.Clause); ok && v > 0 && x.LimitSeconds > 0 {
				worst = math.Max(worst, math.Log(v/x.LimitSeconds))
			}
		}
	}
	for _, x := range ev.Verdict.Violations {
		if x.Clause == result.ClauseOverloaded || x.Clause == result.ClauseRequests || x.Clause == result.ClauseErrorRate {
			k.Uncounted = x.Message
			break
		}
	}
	if !overloaded && !math.IsInf(worst, -1) {
		k.Margin = InfFloat(worst)
	}
	switch {
	case s.Client.Bound:
		k.Excluded = ExcludedClientBound
	case s.Settling.Flagged:
		k.Excluded = ExcludedSettling
	case samples == 0 && !overloaded:
		k.Excluded = ExcludedNoSamples
	}
	return k
}
