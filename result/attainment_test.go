package result

import (
	"math"
	"testing"
	"time"
)

// Minute 0 is fast, minute 1 has one slow request in four (its p95 TTFT
// fails), minute 2 is empty: 7 of 8 requests and 2 of 3 minutes attain.
func TestAttainmentRequestsAndMinutes(t *testing.T) {
	sla := SLA{TTFT: LatencyClause{Percentile: 95, Max: time.Second}, ITL: LatencyClause{Percentile: 95, Max: 50 * time.Millisecond}, MaxErrorRate: 0.5}
	a := NewAttainment(sla, Window{Start: t0, End: t0.Add(3 * time.Minute)}, time.Minute)
	for i := range 4 {
		must(t, a.Write(rec("P0", time.Duration(i)*time.Second, 100*time.Millisecond, 10*time.Millisecond, 5)))
	}
	for i := range 3 {
		must(t, a.Write(rec("P1", time.Minute+time.Duration(i)*time.Second, 200*time.Millisecond, 10*time.Millisecond, 5)))
	}
	must(t, a.Write(rec("P1", time.Minute+10*time.Second, 3*time.Second, 10*time.Millisecond, 5)))
	warm := rec("P1", 0, 5*time.Second, time.Millisecond, 2)
	warm.Warmup = true
	must(t, a.Write(warm))
	must(t, a.Write(rec("P1", 4*time.Minute, 5*time.Second, time.Millisecond, 2))) // after the window
	rows := a.Rows()
	if len(rows) != 3 || rows[0].Profile != "overall" || rows[1].Profile != "P0" || rows[2].Profile != "P1" {
		t.Fatalf("rows %+v", rows)
	}
	if o := rows[0]; o.Requests != 8 || o.RequestShare != 7.0/8 || o.Minutes != 3 || o.MinuteShare != 2.0/3 {
		t.Errorf("overall %+v, want 8 requests 7/8 good, 3 minutes 2/3 within", o)
	}
	if p := rows[1]; p.RequestShare != 1 || p.MinuteShare != 1 {
		t.Errorf("P0 %+v, want all within", p)
	}
	if p := rows[2]; p.Requests != 4 || p.RequestShare != 0.75 || p.MinuteShare != 2.0/3 {
		t.Errorf("P1 %+v", p)
	}
	ser := a.Series()
	if len(ser) != 3 || !ser[0].Within || ser[1].Within || !ser[2].Within || ser[1].TTFT != 3 || math.Abs(ser[0].ITL-0.01) > 1e-6 {
		t.Errorf("series %+v", ser)
	}
	// a slow ITL fails a request and its minute too
	b := NewAttainment(sla, Window{Start: t0, End: t0.Add(time.Minute)}, 0)
	must(t, b.Write(rec("P0", 0, 100*time.Millisecond, 80*time.Millisecond, 5)))
	if r := b.Rows()[0]; r.RequestShare != 0 || r.MinuteShare != 0 {
		t.Errorf("slow ITL: %+v", r)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A request the window's end cut off is no error: a minute of good
// requests and one cut short stays within an SLA of 1 % errors, the cut
// one not good; cut off after waiting past the TTFT limit with no first
// token, it is a TTFT miss; a failed request is an error.
func TestAttainmentCutOffRequests(t *testing.T) {
	sla := SLA{TTFT: LatencyClause{Percentile: 95, Max: time.Second}, ITL: LatencyClause{Percentile: 95, Max: 50 * time.Millisecond}, MaxErrorRate: 0.01}
	end := t0.Add(time.Minute)
	cut := func(at, waited time.Duration, firstToken bool) *Record {
		r := &Record{Profile: "P0", Scheduled: t0.Add(at), Sent: t0.Add(at), Done: t0.Add(at + waited), Status: StatusCancelled}
		if firstToken {
			r.FirstToken = r.Sent.Add(100 * time.Millisecond)
			r.TokenGapsUS = []int64{900000} // cut mid-stream: a gap no ITL judges
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		last   *Record
		within bool
	}{
		{"cut off queued 0.5s", cut(59500*time.Millisecond, 500*time.Millisecond, false), true},
		{"cut off streaming", cut(50*time.Second, 10*time.Second, true), true},
		{"cut off queued past the TTFT limit", cut(40*time.Second, 20*time.Second, false), false},
		{"failed", &Record{Profile: "P0", Scheduled: t0.Add(58 * time.Second), Done: end, Status: StatusHTTPError, HTTPStatus: 500}, false},
	} {
		a := NewAttainment(sla, Window{Start: t0, End: end}, time.Minute)
		must(t, a.Write(rec("P0", 0, 100*time.Millisecond, 10*time.Millisecond, 5)))
		must(t, a.Write(rec("P0", time.Second, 100*time.Millisecond, 10*time.Millisecond, 5)))
		must(t, a.Write(tc.last))
		r := a.Rows()[0]
		if got := r.MinuteShare == 1; got != tc.within {
			t.Errorf("%s: minute within %v, want %v (%+v)", tc.name, got, tc.within, r)
		}
		if r.RequestShare == 1 {
			t.Errorf("%s: the request cut off or failed counted good (%+v)", tc.name, r)
		}
	}
}
