package result

import "testing"

func TestClauseValue(t *testing.T) {
	r := &Result{
		Overall:  Stats{Name: "overall", ErrorRate: 0.02, TTFT: Latency{Count: 10, P95: 1500}},
		Profiles: []Stats{{Name: "P2", TTFT: Latency{Count: 5, P95: 2260, P99: 3000}, ITL: Latency{Count: 0}}},
	}
	for _, tc := range []struct {
		scope, clause string
		want          float64
		ok            bool
	}{
		{"overall", "ttft p95", 1.5, true},
		{"P2", "ttft p95", 2.26, true},
		{"P2", "ttft p99", 3, true},
		{"P2", "ttft p99.9", 0, false}, // not kept
		{"P2", "itl p95", 0, false},    // no sample
		{"overall", ClauseErrorRate, 0.02, true},
		{"P9", "ttft p95", 0, false},
		{"overall", ClauseOverloaded, 0, false},
	} {
		got, ok := r.ClauseValue(tc.scope, tc.clause)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s %s = %v, %v; want %v, %v", tc.scope, tc.clause, got, ok, tc.want, tc.ok)
		}
	}
	v := Verdict{State: VerdictOverloaded, Violations: []Violation{{Scope: "P0", Clause: "ttft p95", Limit: 2}, {Scope: "P2", Clause: ClauseOverloaded}}}
	if x, ok := v.Deciding(); !ok || x.Clause != ClauseOverloaded {
		t.Errorf("overloaded verdict decided by %+v", x)
	}
	if _, ok := (Verdict{State: VerdictPass, Pass: true}).Deciding(); ok {
		t.Error("a pass has no deciding clause")
	}
}
