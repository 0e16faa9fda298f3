package result

import (
	"testing"
	"time"
)

func TestExceedanceCountsSamplesOverEachLimit(t *testing.T) {
	sla := SLA{TTFT: LatencyClause{Percentile: 95, Max: 50 * time.Millisecond}, ITL: LatencyClause{Percentile: 99, Max: 25 * time.Millisecond},
		Scope: SLAScopePerProfile, MaxErrorRate: 1}
	s := NewSummary(sla, Window{Start: t0, End: t0.Add(10 * time.Second)})
	// 100 P0 requests with TTFT 1..100 ms: 50 over 50 ms; 11 tokens each,
	// gaps of 20 ms except every tenth request's 30 ms
	for i := 1; i <= 100; i++ {
		gap := 20 * time.Millisecond
		if i%10 == 0 {
			gap = 30 * time.Millisecond
		}
		s.Add(rec("P0", time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond, gap, 11))
	}
	// cut off at the window's end without a first token: one after 80 ms
	// (over the TTFT limit), one after 10 ms (not known to be over: left out)
	s.Add(&Record{Profile: "P0", Scheduled: t0.Add(9 * time.Second), Done: t0.Add(9*time.Second + 80*time.Millisecond), Status: StatusCancelled})
	s.Add(&Record{Profile: "P0", Scheduled: t0.Add(9 * time.Second), Done: t0.Add(9*time.Second + 10*time.Millisecond), Status: StatusCancelled})
	// a failed request has no latency sample
	s.Add(failed("P0", time.Second, StatusHTTPError, 500))
	res := s.Result()
	want := []Exceedance{
		{Clause: "ttft p95", Percentile: 95, LimitSeconds: 0.05, Samples: 101, Over: 51},
		{Clause: "itl p99", Percentile: 99, LimitSeconds: 0.025, Samples: 1000, Over: 100},
	}
	for _, st := range []Stats{res.Overall, res.Profiles[0]} {
		if len(st.Exceedance) != len(want) {
			t.Fatalf("%s: exceedance %+v, want %+v", st.Name, st.Exceedance, want)
		}
		for i, w := range want {
			if st.Exceedance[i] != w {
				t.Errorf("%s: %+v, want %+v", st.Name, st.Exceedance[i], w)
			}
		}
	}
	if a := want[0].Allowance(); a < 0.0499 || a > 0.0501 {
		t.Errorf("allowance of a p95 clause %g, want 0.05", a)
	}
}
