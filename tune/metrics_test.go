package tune

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
)

func stats(name string, ttftP95, itlP95 float64, errRate float64) result.Stats {
	return result.Stats{Name: name, OK: 100, ErrorRate: errRate,
		TTFT:                  result.Latency{P50: ttftP95 / 2, P95: ttftP95, P99: ttftP95 * 1.5},
		ITL:                   result.Latency{P50: itlP95 / 2, P95: itlP95, P99: itlP95 * 2},
		OutputTokensPerSecond: 1000, TotalTokensPerSecond: 50000, RequestsPerSecond: 2, GoodputPerSecond: 1.5}
}

func TestMetrics(t *testing.T) {
	res := &result.Result{Overall: stats("overall", 800, 40, 0)}
	m := Metrics(res)
	for k, want := range map[string]float64{"output_throughput": 1000, "total_throughput": 50000, "request_throughput": 2,
		"goodput": 1.5, "ttft_p95": 800, "ttft_p50": 400, "itl_p99": 80, "itl_p95": 40} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	for name := range metricUnits {
		if _, ok := m[name]; !ok && name != MetricCapacity {
			t.Errorf("objective metric %q has no value", name)
		}
		if Unit(name) == "" {
			t.Errorf("objective metric %q has no unit", name)
		}
	}
}

func TestConstraints(t *testing.T) {
	sla := result.DefaultSLA() // ttft p95 ≤ 2s, itl p95 ≤ 100ms, errors ≤ 1%, per profile
	for _, tc := range []struct {
		name  string
		res   result.Result
		sla   func(*result.SLA)
		want  []float64
		names []string
	}{
		{
			name: "per profile: worst profile counts",
			res: result.Result{Overall: stats("overall", 1000, 50, 0),
				Profiles: []result.Stats{stats("P0", 1000, 50, 0), stats("P2", 3000, 20, 0.03)}},
			want:  []float64{0.5, -0.5, 2},
			names: []string{"ttft p95 ≤ 2s", "itl p95 ≤ 100ms", "error rate ≤ 1%"},
		},
		{
			name: "overall scope ignores profiles",
			res: result.Result{Overall: stats("overall", 1000, 50, 0),
				Profiles: []result.Stats{stats("P2", 3000, 20, 0.03)}},
			sla:  func(s *result.SLA) { s.Scope = result.SLAScopeOverall },
			want: []float64{-0.5, -0.5, -1},
		},
		{
			name: "disabled clauses are left out, zero error budget",
			res:  result.Result{Overall: stats("overall", 1000, 50, 0.005)},
			sla:  func(s *result.SLA) { s.Scope = result.SLAScopeOverall; s.ITL.Max = 0; s.MaxErrorRate = 0 },
			want: []float64{-0.5, 0.5}, names: []string{"ttft p95 ≤ 2s", "error rate ≤ 0%"},
		},
		{
			name: "unreported percentile uses the verdict",
			res: result.Result{Overall: stats("overall", 1000, 50, 0), SLA: result.Verdict{Violations: []result.Violation{
				{Scope: "overall", Clause: "ttft p97", Value: 3, Limit: 2}}}},
			sla:  func(s *result.SLA) { s.Scope = result.SLAScopeOverall; s.TTFT.Percentile = 97 },
			want: []float64{0.5, -0.5, -1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sla
			s.TTFT.Max = 2 * time.Second
			if tc.sla != nil {
				tc.sla(&s)
			}
			got, names := Constraints(&tc.res, s)
			if len(got) != len(tc.want) {
				t.Fatalf("constraints = %v, want %v", got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Errorf("constraints = %v, want %v", got, tc.want)
					break
				}
			}
			if tc.names != nil && !reflect.DeepEqual(names, tc.names) {
				t.Errorf("names = %q, want %q", names, tc.names)
			}
		})
	}
}
