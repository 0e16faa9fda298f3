package result

import (
	"strconv"
	"strings"
	"time"
)

// Violation is one SLA clause a run failed.
type Violation struct {
	// Scope is the profile name, or "overall".
	Scope string `json:"scope"`
	// Clause is "ttft p95", "itl p95", "tpot p95", "e2e p95", "error_rate" or
	// "requests" (no completed request to judge).
	Clause string `json:"clause"`
	// Value and Limit are seconds for latency clauses, fractions for the
	// error rate.
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	// Message reads like "P2 ttft p95 2.41s > 2s".
	Message string `json:"message"`
}

// Verdict is the SLA judgement of a run.
type Verdict struct {
	Pass bool `json:"pass"`
	// Scope is SLAScopeOverall or SLAScopePerProfile.
	Scope string `json:"scope"`
	// Violations lists every failed clause: scopes in order (overall, or
	// profiles by name), clauses in the order ttft, itl, tpot, e2e, error rate.
	Violations []Violation `json:"violations,omitempty"`
}

// First is the message of the first violated clause, or "" when the SLA is met.
func (v Verdict) First() string {
	if len(v.Violations) == 0 {
		return ""
	}
	return v.Violations[0].Message
}

// String is "pass" or "fail: " followed by every violation.
func (v Verdict) String() string {
	if v.Pass {
		return "pass"
	}
	msgs := make([]string, len(v.Violations))
	for i, x := range v.Violations {
		msgs[i] = x.Message
	}
	return "fail: " + strings.Join(msgs, "; ")
}

// EvaluateSLA judges what the summary holds against its SLA; Result
// includes the same verdict.
func (s *Summary) EvaluateSLA() Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evaluateLocked()
}

func (s *Summary) evaluateLocked() Verdict {
	v := Verdict{Scope: s.sla.Scope}
	if v.Scope == "" {
		v.Scope = SLAScopeOverall
	}
	if s.overall.requests == 0 {
		v.Violations = append(v.Violations, Violation{Scope: "overall", Clause: "requests",
			Message: "overall: no requests in the measured window"})
		return v
	}
	groups := []*group{s.overall}
	if v.Scope == SLAScopePerProfile {
		groups = groups[:0]
		for _, name := range sortedKeys(s.profiles) {
			groups = append(groups, s.profiles[name])
		}
	}
	for _, g := range groups {
		v.Violations = append(v.Violations, s.judge(g)...)
	}
	v.Pass = len(v.Violations) == 0
	return v
}

func (s *Summary) judge(g *group) []Violation {
	var out []Violation
	if g.ok+g.errorCount() == 0 {
		return []Violation{{Scope: g.name, Clause: "requests",
			Message: g.name + ": no completed requests (" + strconv.FormatInt(g.cancelled, 10) + " cancelled)"}}
	}
	for _, c := range []struct {
		m      Metric
		clause LatencyClause
	}{{MetricTTFT, s.sla.TTFT}, {MetricITL, s.sla.ITL}, {MetricTPOT, s.sla.TPOT}, {MetricE2E, s.sla.E2E}} {
		if c.clause.Max <= 0 {
			continue
		}
		name := c.m.String() + " p" + fmtFloat(c.clause.Percentile)
		val, ok := g.quantile(c.m, c.clause.Percentile)
		if !ok {
			// ITL and TPOT need two tokens; only TTFT and E2E must exist.
			if (c.m == MetricTTFT || c.m == MetricE2E) && g.ok == 0 {
				out = append(out, Violation{Scope: g.name, Clause: name,
					Message: g.name + " " + name + ": no successful request"})
			}
			continue
		}
		if limit := c.clause.Max; val > limit {
			out = append(out, Violation{Scope: g.name, Clause: name, Value: val.Seconds(), Limit: limit.Seconds(),
				Message: g.name + " " + name + " " + fmtDuration(val) + " > " + fmtDuration(limit)})
		}
	}
	if n := g.ok + g.errorCount(); n > 0 {
		rate := float64(g.errorCount()) / float64(n)
		if rate > s.sla.MaxErrorRate {
			out = append(out, Violation{Scope: g.name, Clause: "error_rate", Value: rate, Limit: s.sla.MaxErrorRate,
				Message: g.name + " error rate " + fmtPercent(rate) + " > " + fmtPercent(s.sla.MaxErrorRate)})
		}
	}
	return out
}

func sortedKeys(m map[string]*group) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // insertion sort: few profiles
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// fmtDuration prints d with three significant digits: 2.41s, 100ms, 850µs.
func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmtFloat(d.Seconds()) + "s"
	case d >= time.Millisecond:
		return fmtFloat(float64(d)/float64(time.Millisecond)) + "ms"
	default:
		return fmtFloat(float64(d)/float64(time.Microsecond)) + "µs"
	}
}

func fmtFloat(f float64) string {
	if f >= 1000 || f <= -1000 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

func fmtPercent(f float64) string { return strconv.FormatFloat(f*100, 'g', 3, 64) + "%" }
