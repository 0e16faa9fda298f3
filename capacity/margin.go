package capacity

import "strconv"

// Margin is the binding clause of a sweep — the SLA clause that failed
// first at the first failing count — with its value at the ceiling and
// there: how close the ceiling ran to its limit, and by how much the next
// count broke it.
type Margin struct {
	// Scope is the profile ("overall" under an overall SLA); Clause reads
	// "ttft p95" or "error_rate".
	Scope  string `json:"scope"`
	Clause string `json:"clause"`
	// Limit, AtCeiling and AtFirstFailing are seconds for a latency clause,
	// fractions for the error rate; AtCeiling is the worst of the ceiling's
	// repeats, AtFirstFailing that of the failing count's.
	Limit          float64 `json:"limit"`
	AtCeiling      float64 `json:"at_ceiling"`
	AtFirstFailing float64 `json:"at_first_failing"`
	// Headroom is (Limit − AtCeiling) / Limit: the fraction of the limit
	// left unused at the ceiling.
	Headroom float64 `json:"headroom"`
}

// sweepMargin finds the binding clause in the evaluations kept in the
// levels' repeats; nil when the sweep has no failing count, the clause has
// no limit (an overloaded run) or the runs' summaries were not kept.
func sweepMargin(res *SweepResult) *Margin {
	if res.Ceiling == 0 || res.FirstFailing == 0 {
		return nil
	}
	var ceil, fail *Level
	for i := range res.Levels {
		switch res.Levels[i].Users {
		case res.Ceiling:
			ceil = &res.Levels[i]
		case res.FirstFailing:
			fail = &res.Levels[i]
		}
	}
	if ceil == nil || fail == nil {
		return nil
	}
	var m *Margin
	for _, r := range fail.Repeats {
		ev, ok := r.Detail.(*Evaluation)
		if !ok || ev.Summary == nil {
			continue
		}
		x, ok := ev.Verdict.Deciding()
		if !ok || x.Limit <= 0 {
			continue
		}
		m = &Margin{Scope: x.Scope, Clause: x.Clause, Limit: x.Limit, AtFirstFailing: x.Value}
		break
	}
	if m == nil {
		return nil
	}
	found := false
	for _, r := range ceil.Repeats {
		ev, ok := r.Detail.(*Evaluation)
		if !ok || ev.Summary == nil {
			continue
		}
		if v, ok := ev.Summary.ClauseValue(m.Scope, m.Clause); ok {
			m.AtCeiling, found = max(m.AtCeiling, v), true
		}
	}
	if !found {
		return nil
	}
	m.Headroom = (m.Limit - m.AtCeiling) / m.Limit
	return m
}

// Format prints one of the margin's values in the clause's unit: a
// latency in milliseconds below a second (an ITL limit of 60 ms reads
// "60 ms", not "0.06 s"), in seconds from there; the error rate as a
// percentage.
func (m *Margin) Format(v float64) string {
	switch {
	case m.Clause == "error_rate":
		return strconv.FormatFloat(100*v, 'g', 3, 64) + " %"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	case v >= 0.01:
		return strconv.FormatFloat(1000*v, 'f', 0, 64) + " ms"
	default:
		return strconv.FormatFloat(1000*v, 'f', 1, 64) + " ms"
	}
}
