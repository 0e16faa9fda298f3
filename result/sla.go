package result

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Clause names that are not latency percentiles ("ttft p95", "itl p95", ...).
const (
	// ClauseRequests: the window held no request to judge.
	ClauseRequests = "requests"
	// ClauseErrorRate: too many failed requests.
	ClauseErrorRate = "error_rate"
	// ClauseOverloaded: no request completed in the window while requests
	// were outstanding at its end.
	ClauseOverloaded = "overloaded"
)

// VerdictState is the SLA judgement in one word.
type VerdictState string

// Verdict states. Only VerdictPass passes; the others say why not, so that a
// caller can tell a measured failure from a run that could not be judged.
const (
	// VerdictPass: every clause was judged and met.
	VerdictPass VerdictState = "pass"
	// VerdictFail: at least one clause was judged and violated.
	VerdictFail VerdictState = "fail"
	// VerdictOverloaded: the SLA failed because the server was overloaded:
	// in a judged scope no request completed in the measured window while
	// requests were outstanding at its end (typically all still queued,
	// without a first token). It is a failure at this load, not an empty or
	// infeasible run.
	VerdictOverloaded VerdictState = "overloaded"
	// VerdictInsufficient: no clause failed, but at least one had too few
	// samples for its percentile (see MinSamples); the run is neither a pass
	// nor a fail and must not be called capacity.
	VerdictInsufficient VerdictState = "insufficient_samples"
	// VerdictNoRequests: the measured window held no request at all.
	VerdictNoRequests VerdictState = "no_requests"
)

// MinSamples is the smallest number of samples at which the p-th percentile
// is judged: n ≥ 100/(100−p), the count at which at least one sample is
// expected above the p-th percentile (p50 needs 2, p90 10, p95 20, p99 100,
// p99.9 1000; p100, the maximum, needs 1). With fewer, the "p95" of 12
// requests is one of their slowest two, an extrapolation rather than an
// observation of the tail, and a pass or fail on it says little about the
// 95th percentile of the load.
func MinSamples(p float64) int64 {
	if p >= 100 {
		return 1
	}
	if p <= 0 {
		return 1
	}
	return int64(math.Ceil(100/(100-p) - 1e-9))
}

// Violation is one SLA clause a run failed, or could not judge.
type Violation struct {
	// Scope is the profile name, or "overall".
	Scope string `json:"scope"`
	// Clause is "ttft p95", "itl p95", "tpot p95", "e2e p95", ClauseErrorRate,
	// ClauseOverloaded or ClauseRequests.
	Clause string `json:"clause"`
	// Value and Limit are seconds for latency clauses, fractions for the
	// error rate.
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	// Samples and MinSamples are set on a clause with too few samples:
	// how many it had and how many its percentile needs.
	Samples    int64 `json:"samples,omitempty"`
	MinSamples int64 `json:"min_samples,omitempty"`
	// Unmeasurable marks a clause that was not judged because the run
	// could not measure its metric (ITL through a buffering proxy,
	// StreamReport); such a clause never counts as a provisional pass.
	Unmeasurable bool `json:"unmeasurable,omitempty"`
	// Message reads like "P2 ttft p95 2.41s > 2s".
	Message string `json:"message"`
}

// Verdict is the SLA judgement of a run.
type Verdict struct {
	// Pass is true only in VerdictPass.
	Pass bool `json:"pass"`
	// State says why a verdict is not a pass; empty only in summaries
	// written before it existed (see Outcome).
	State VerdictState `json:"state,omitempty"`
	// Scope is SLAScopeOverall or SLAScopePerProfile.
	Scope string `json:"scope"`
	// Violations lists every failed clause: scopes in order (overall, or
	// profiles by name), clauses in the order overloaded, ttft, itl, tpot,
	// e2e, error rate.
	Violations []Violation `json:"violations,omitempty"`
	// Insufficient lists the clauses that had too few samples to be judged,
	// in the same order; they are neither met nor violated.
	Insufficient []Violation `json:"insufficient,omitempty"`
}

// Outcome is v.State, or, for a verdict decoded from a summary written
// before State existed, VerdictPass or VerdictFail from Pass.
func (v Verdict) Outcome() VerdictState {
	switch {
	case v.State != "":
		return v.State
	case v.Pass:
		return VerdictPass
	}
	return VerdictFail
}

// First is the message of the clause that decided the verdict: the first
// overloaded scope when overloaded, else the first violated clause, else the
// first clause with too few samples; "" when the SLA is met.
// FewSamplesPass reports whether a verdict of VerdictInsufficient would
// be a pass if its clauses with too few samples were judged on the values
// measured: a provisional pass, good enough to rank configurations on
// short windows, never to state a capacity.
func (v Verdict) FewSamplesPass() bool {
	if v.Outcome() != VerdictInsufficient {
		return false
	}
	for _, x := range v.Insufficient {
		if x.Value > x.Limit || x.Unmeasurable {
			return false
		}
	}
	return true
}

func (v Verdict) First() string {
	if v.Outcome() == VerdictOverloaded {
		for _, x := range v.Violations {
			if x.Clause == ClauseOverloaded {
				return x.Message
			}
		}
	}
	if len(v.Violations) > 0 {
		return v.Violations[0].Message
	}
	if len(v.Insufficient) > 0 {
		return v.Insufficient[0].Message
	}
	return ""
}

// String is "pass", "fail: " followed by every violation, "fail: overloaded:
// " followed by every violation, or "insufficient samples: " followed by
// every clause that could not be judged.
func (v Verdict) String() string {
	join := func(xs []Violation) string {
		msgs := make([]string, len(xs))
		for i, x := range xs {
			msgs[i] = x.Message
		}
		return strings.Join(msgs, "; ")
	}
	switch v.Outcome() {
	case VerdictPass:
		return "pass"
	case VerdictOverloaded:
		return "fail: overloaded: " + join(v.Violations)
	case VerdictInsufficient:
		return "insufficient samples: " + join(v.Insufficient)
	}
	return "fail: " + join(v.Violations)
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
		v.State = VerdictNoRequests
		v.Violations = append(v.Violations, Violation{Scope: "overall", Clause: ClauseRequests,
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
	itlUnmeasurable := s.streamLocked().ITLUnmeasurable
	overloaded := false
	for _, g := range groups {
		overloaded = s.judge(g, &v, itlUnmeasurable) || overloaded
	}
	switch {
	case overloaded:
		v.State = VerdictOverloaded
	case len(v.Violations) > 0:
		v.State = VerdictFail
	case len(v.Insufficient) > 0:
		v.State = VerdictInsufficient
	default:
		v.State = VerdictPass
	}
	v.Pass = v.State == VerdictPass
	return v
}

// judge adds g's failed and unjudgeable clauses to v and reports whether g
// was overloaded; itlUnmeasurable leaves the ITL clause unjudged.
func (s *Summary) judge(g *group, v *Verdict, itlUnmeasurable bool) (overloaded bool) {
	if g.ok == 0 && g.cancelled > 0 {
		// Requests were outstanding at the window's end and none
		// completed: the server is not keeping up at all. Latency clauses
		// have nothing to judge; the error rate still does.
		msg := g.name + ": no request sent in the measured window completed, " +
			strconv.FormatInt(g.cancelled, 10) + " outstanding at its end"
		if g.cancelledQueued == g.cancelled {
			msg += ", all still waiting for a first token"
		} else {
			msg += " (" + strconv.FormatInt(g.cancelledQueued, 10) + " without a first token)"
		}
		v.Violations = append(v.Violations, Violation{Scope: g.name, Clause: ClauseOverloaded,
			Value: float64(g.cancelled), Message: msg})
		s.judgeErrorRate(g, v)
		return true
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
				v.Violations = append(v.Violations, Violation{Scope: g.name, Clause: name,
					Message: g.name + " " + name + ": no successful request"})
			}
			continue
		}
		limit := c.clause.Max
		if c.m == MetricITL && itlUnmeasurable {
			v.Insufficient = append(v.Insufficient, Violation{Scope: g.name, Clause: name, Value: val.Seconds(), Limit: limit.Seconds(),
				Unmeasurable: true, Message: g.name + " " + name + ": unmeasurable, token chunks arrived in bursts the server did not send (a buffering proxy)"})
			continue
		}
		if n, need := g.hist[c.m].TotalCount(), MinSamples(c.clause.Percentile); n < need {
			v.Insufficient = append(v.Insufficient, Violation{Scope: g.name, Clause: name, Value: val.Seconds(), Limit: limit.Seconds(),
				Samples: n, MinSamples: need,
				Message: g.name + " " + name + ": " + strconv.FormatInt(n, 10) + " samples, needs " + strconv.FormatInt(need, 10)})
			continue
		}
		if val > limit {
			v.Violations = append(v.Violations, Violation{Scope: g.name, Clause: name, Value: val.Seconds(), Limit: limit.Seconds(),
				Message: g.name + " " + name + " " + fmtDuration(val) + " > " + fmtDuration(limit)})
		}
	}
	s.judgeErrorRate(g, v)
	return false
}

func (s *Summary) judgeErrorRate(g *group, v *Verdict) {
	if n := g.ok + g.errorCount(); n > 0 {
		rate := float64(g.errorCount()) / float64(n)
		if rate > s.sla.MaxErrorRate {
			v.Violations = append(v.Violations, Violation{Scope: g.name, Clause: ClauseErrorRate, Value: rate, Limit: s.sla.MaxErrorRate,
				Message: g.name + " error rate " + fmtPercent(rate) + " > " + fmtPercent(s.sla.MaxErrorRate)})
		}
	}
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

// fmtSignedPercent is fmtPercent with a sign: +12.5%, -3%.
func fmtSignedPercent(f float64) string {
	if f >= 0 {
		return "+" + fmtPercent(f)
	}
	return fmtPercent(f)
}

// Deciding is the violation First names; ok is false when the SLA is met.
func (v Verdict) Deciding() (x Violation, ok bool) {
	if v.Outcome() == VerdictOverloaded {
		for _, x := range v.Violations {
			if x.Clause == ClauseOverloaded {
				return x, true
			}
		}
	}
	if len(v.Violations) > 0 {
		return v.Violations[0], true
	}
	if len(v.Insufficient) > 0 {
		return v.Insufficient[0], true
	}
	return Violation{}, false
}

// ClauseValue is what r measured for a clause of its SLA ("ttft p95",
// "error_rate", …) in scope ("overall" or a profile name), in the unit of
// Violation.Value: seconds for a latency percentile, a fraction for the
// error rate. ok is false when r holds no such value: an unknown scope, a
// percentile the summary does not keep (only p50, p90, p95 and p99 are),
// or a latency with no sample.
func (r *Result) ClauseValue(scope, clause string) (v float64, ok bool) {
	var st *Stats
	if scope == "overall" || scope == "" {
		st = &r.Overall
	}
	for i := range r.Profiles {
		if r.Profiles[i].Name == scope {
			st = &r.Profiles[i]
		}
	}
	if st == nil {
		return 0, false
	}
	if clause == ClauseErrorRate {
		return st.ErrorRate, true
	}
	metric, pct, found := strings.Cut(clause, " p")
	if !found {
		return 0, false
	}
	var lat *Latency
	switch metric {
	case MetricTTFT.String():
		lat = &st.TTFT
	case MetricITL.String():
		lat = &st.ITL
	case MetricTPOT.String():
		lat = &st.TPOT
	case MetricE2E.String():
		lat = &st.E2E
	default:
		return 0, false
	}
	if lat.Count == 0 {
		return 0, false
	}
	ms := map[string]float64{"50": lat.P50, "90": lat.P90, "95": lat.P95, "99": lat.P99}
	x, ok := ms[pct]
	return x / 1000, ok
}
