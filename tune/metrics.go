package tune

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spoc-project/spoc/result"
)

// MetricCapacity is the objective measured by an inner capacity search
// rather than read from the run at the study's load.
const MetricCapacity = "capacity"

// Metric units as shown in progress lines and reports: throughputs per
// second, latencies in milliseconds (the unit of result.Latency).
var metricUnits = map[string]string{
	"output_throughput":  "tok/s",
	"total_throughput":   "tok/s",
	"request_throughput": "req/s",
	"goodput":            "req/s",
	"ttft_p50":           "ms",
	"ttft_p95":           "ms",
	"ttft_p99":           "ms",
	"itl_p50":            "ms",
	"itl_p95":            "ms",
	"itl_p99":            "ms",
	"tpot_p95":           "ms",
	"e2e_p95":            "ms",
	MetricCapacity:       "users",
}

// Unit returns the unit of an objective metric ("tok/s", "ms", …).
func Unit(metric string) string { return metricUnits[metric] }

// Metrics reads every objective metric except capacity from a run's
// summary (overall statistics): throughputs per second, latencies in ms.
func Metrics(res *result.Result) map[string]float64 {
	o := res.Overall
	return map[string]float64{
		"output_throughput":  o.OutputTokensPerSecond,
		"total_throughput":   o.TotalTokensPerSecond,
		"request_throughput": o.RequestsPerSecond,
		"goodput":            o.GoodputPerSecond,
		"ttft_p50":           o.TTFT.P50,
		"ttft_p95":           o.TTFT.P95,
		"ttft_p99":           o.TTFT.P99,
		"itl_p50":            o.ITL.P50,
		"itl_p95":            o.ITL.P95,
		"itl_p99":            o.ITL.P99,
		"tpot_p95":           o.TPOT.P95,
		"e2e_p95":            o.E2E.P95,
	}
}

// Constraints turns the SLA into constraint values for constrained
// domination, one per enabled clause in the order ttft, itl, tpot, e2e,
// error rate: (measured − limit) / limit of the worst scope (overall, or the
// worst profile when the SLA is per profile), so ≤ 0 means met and clauses
// of different units weigh alike. names describe the clauses ("ttft p95 ≤
// 2s"). A clause whose percentile the summary does not report (only p50,
// p90, p95, p99 and max are) is judged from the summary's own verdict.
func Constraints(res *result.Result, sla result.SLA) (values []float64, names []string) {
	scopes := []result.Stats{res.Overall}
	if sla.Scope == result.SLAScopePerProfile && len(res.Profiles) > 0 {
		scopes = res.Profiles
	}
	clauses := []struct {
		name string
		c    result.LatencyClause
		get  func(result.Stats) result.Latency
	}{
		{"ttft", sla.TTFT, func(s result.Stats) result.Latency { return s.TTFT }},
		{"itl", sla.ITL, func(s result.Stats) result.Latency { return s.ITL }},
		{"tpot", sla.TPOT, func(s result.Stats) result.Latency { return s.TPOT }},
		{"e2e", sla.E2E, func(s result.Stats) result.Latency { return s.E2E }},
	}
	for _, cl := range clauses {
		if cl.c.Max <= 0 {
			continue
		}
		limitMs := float64(cl.c.Max) / float64(time.Millisecond)
		name := fmt.Sprintf("%s p%g ≤ %s", cl.name, cl.c.Percentile, cl.c.Max)
		worst, known := math.Inf(-1), true
		for _, s := range scopes {
			v, ok := percentile(cl.get(s), cl.c.Percentile)
			if !ok {
				known = false
				break
			}
			worst = max(worst, (v-limitMs)/limitMs)
		}
		if !known {
			worst = verdictViolation(res.SLA, cl.name+" p", limitMs/1000)
		}
		values = append(values, worst)
		names = append(names, name)
	}
	limit := sla.MaxErrorRate
	scale := max(limit, 0.01)
	worst := math.Inf(-1)
	for _, s := range scopes {
		worst = max(worst, (s.ErrorRate-limit)/scale)
	}
	values = append(values, worst)
	names = append(names, fmt.Sprintf("error rate ≤ %g%%", 100*limit))
	return values, names
}

// percentile reads a reported percentile of l in ms.
func percentile(l result.Latency, p float64) (float64, bool) {
	switch p {
	case 50:
		return l.P50, true
	case 90:
		return l.P90, true
	case 95:
		return l.P95, true
	case 99:
		return l.P99, true
	case 100:
		return l.Max, true
	}
	return 0, false
}

// verdictViolation is the relative violation of the worst clause whose name
// starts with prefix in v (0 when none is violated); limitSeconds is the
// clause's limit.
func verdictViolation(v result.Verdict, prefix string, limitSeconds float64) float64 {
	worst := 0.0
	for _, x := range v.Violations {
		if strings.HasPrefix(x.Clause, prefix) && limitSeconds > 0 {
			worst = max(worst, (x.Value-limitSeconds)/limitSeconds)
		}
	}
	return worst
}
