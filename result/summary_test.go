package result

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// rec builds an ok record scheduled at t0+at with the given TTFT, ITL gap and
// token count.
func rec(profile string, at, ttft, gap time.Duration, tokens int) *Record {
	s := t0.Add(at)
	r := &Record{Profile: profile, Scheduled: s, Sent: s.Add(time.Millisecond), FirstToken: s.Add(ttft),
		PromptTokensTarget: 1000, PromptTokens: 1000, OutputTokens: tokens, Status: StatusOK}
	for range tokens - 1 {
		r.TokenGapsUS = append(r.TokenGapsUS, gap.Microseconds())
	}
	r.Done = r.FirstToken.Add(time.Duration(tokens-1) * gap)
	return r
}

func failed(profile string, at time.Duration, st Status, code int) *Record {
	s := t0.Add(at)
	return &Record{Profile: profile, Scheduled: s, Sent: s, Done: s.Add(time.Millisecond), Status: st, HTTPStatus: code}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 0.002*math.Max(math.Abs(a), math.Abs(b))+1e-9 }

func TestSummaryStats(t *testing.T) {
	sla := DefaultSLA()
	sla.Scope = SLAScopeOverall
	w := Window{Start: t0, End: t0.Add(10 * time.Second)}
	s := NewSummary(sla, w)
	// 100 ok P0 requests: TTFT i ms (1..100), 11 tokens at 20 ms gaps.
	for i := 1; i <= 100; i++ {
		s.Add(rec("P0", time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond, 20*time.Millisecond, 11))
	}
	s.Add(failed("P1", time.Second, StatusHTTPError, 429))
	s.Add(failed("P1", time.Second, StatusTimeout, 0))
	s.Add(failed("P1", time.Second, StatusStreamError, 200))
	s.Add(&Record{Profile: "P1", Scheduled: t0.Add(9 * time.Second), Status: StatusCancelled, OutputTokens: 3})
	if s.Add(rec("P0", -time.Second, time.Millisecond, time.Millisecond, 2)) {
		t.Fatal("warm-up record counted")
	}
	if s.Add(rec("P0", 10*time.Second, time.Millisecond, time.Millisecond, 2)) {
		t.Fatal("record at the window end counted")
	}
	res := s.Result()
	o := res.Overall
	if o.Requests != 104 || o.OK != 100 || o.Errors != 3 || o.Cancelled != 1 || res.Excluded != 2 {
		t.Fatalf("counts: %+v excluded %d", o, res.Excluded)
	}
	if o.OK+o.Errors+o.Cancelled != o.Requests {
		t.Fatal("ok + errors + cancelled != requests")
	}
	for _, st := range []Status{StatusHTTPError, StatusTimeout, StatusStreamError} {
		if o.ErrorsByClass[st] != 1 {
			t.Errorf("errors[%s] = %d, want 1", st, o.ErrorsByClass[st])
		}
	}
	if o.ErrorsByHTTPStatus[429] != 1 || o.ErrorsByHTTPStatus[200] != 1 {
		t.Errorf("by http status: %v", o.ErrorsByHTTPStatus)
	}
	if !near(o.ErrorRate, 3.0/103) {
		t.Errorf("error rate %v", o.ErrorRate)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"ttft p50", o.TTFT.P50, 50}, {"ttft p90", o.TTFT.P90, 90}, {"ttft p95", o.TTFT.P95, 95},
		{"ttft p99", o.TTFT.P99, 99}, {"ttft max", o.TTFT.Max, 100},
		{"itl p99", o.ITL.P99, 20}, {"tpot p50", o.TPOT.P50, 20},
		{"e2e max", o.E2E.Max, 300}, {"lag p99", o.DispatchLag.P99, 1},
		{"output tok/s", o.OutputTokensPerSecond, (1100 + 3) / 10.0},
		{"total tok/s", o.TotalTokensPerSecond, (1100 + 3 + 100000) / 10.0},
		{"req/s", o.RequestsPerSecond, 10}, {"goodput", o.GoodputPerSecond, 10},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if o.ITL.Count != 1000 {
		t.Errorf("itl samples %d, want 1000", o.ITL.Count)
	}
	if len(res.Profiles) != 2 || res.Profiles[0].Name != "P0" || res.Profiles[1].OK != 0 {
		t.Fatalf("profiles: %+v", res.Profiles)
	}
	// 3 errors of 103 > 1 %.
	if res.SLA.Pass || res.SLA.First() != "overall error rate 2.91% > 1%" {
		t.Errorf("verdict %v", res.SLA)
	}
	if res.Client.Bound {
		t.Errorf("client bound: %v", res.Client.Reasons)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

func TestSLAVerdicts(t *testing.T) {
	base := DefaultSLA() // ttft p95 2s, itl p95 100ms, 1 % errors, per profile
	cases := []struct {
		name    string
		sla     func(*SLA)
		records []*Record
		want    []string // violation messages; nil means pass
	}{
		{name: "pass", records: []*Record{rec("P0", 0, time.Second, 50*time.Millisecond, 5), rec("P1", 0, time.Second, 50*time.Millisecond, 5)}},
		{name: "ttft per profile names the profile",
			records: []*Record{rec("P0", 0, time.Second, 50*time.Millisecond, 5), rec("P2", 0, 2410*time.Millisecond, 50*time.Millisecond, 5)},
			want:    []string{"P2 ttft p95 2.41s > 2s"}},
		{name: "overall scope judges the mix", sla: func(s *SLA) { s.Scope = SLAScopeOverall },
			records: append(repeat(rec("P0", 0, time.Second, 50*time.Millisecond, 5), 99), rec("P2", 0, 3*time.Second, 50*time.Millisecond, 5)),
		},
		{name: "itl and error rate in clause order",
			records: []*Record{rec("P0", 0, time.Second, 150*time.Millisecond, 5), failed("P0", 0, StatusHTTPError, 503)},
			want:    []string{"P0 itl p95 150ms > 100ms", "P0 error rate 50% > 1%"}},
		{name: "tpot and e2e clauses when enabled",
			sla: func(s *SLA) {
				s.TPOT = LatencyClause{Percentile: 99, Max: 40 * time.Millisecond}
				s.E2E = LatencyClause{Percentile: 50, Max: time.Second}
			},
			records: []*Record{rec("P0", 0, 500*time.Millisecond, 50*time.Millisecond, 21)},
			want:    []string{"P0 tpot p99 50ms > 40ms", "P0 e2e p50 1.5s > 1s"}},
		// Deliberate change: this was "P0: no completed requests (1
		// cancelled)", an empty run; it is an overload.
		{name: "all cancelled", records: []*Record{{Profile: "P0", Scheduled: t0, Status: StatusCancelled}},
			want: []string{"P0: no request sent in the measured window completed, 100 outstanding at its end, all still waiting for a first token"}},
		{name: "empty window", want: []string{"overall: no requests in the measured window"}},
		{name: "only errors", records: []*Record{failed("P0", 0, StatusTimeout, 0)},
			want: []string{"P0 ttft p95: no successful request", "P0 error rate 100% > 1%"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sla := base
			if c.sla != nil {
				c.sla(&sla)
			}
			s := NewSummary(sla, Window{})
			// 100 copies of each: enough samples for any percentile up to
			// p99 (TestInsufficientSamples covers fewer).
			for range 100 {
				for _, r := range c.records {
					s.Add(r)
				}
			}
			v := s.EvaluateSLA()
			var got []string
			for _, x := range v.Violations {
				got = append(got, x.Message)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || v.Pass != (len(c.want) == 0) {
				t.Fatalf("violations %q (pass %v), want %q", got, v.Pass, c.want)
			}
		})
	}
}

func repeat(r *Record, n int) []*Record {
	out := make([]*Record, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func TestClientBound(t *testing.T) {
	s := NewSummary(DefaultSLA(), Window{}, WithClientBoundLag(5*time.Millisecond))
	r := rec("P0", 0, time.Second, time.Millisecond, 2)
	r.Sent = r.Scheduled.Add(20 * time.Millisecond)
	s.Add(r)
	res := s.Result()
	if !res.Client.Bound || !strings.Contains(res.Client.Reasons[0], "dispatch lag p99 20ms > 5ms") {
		t.Fatalf("client %+v", res.Client)
	}
	s = NewSummary(DefaultSLA(), Window{})
	s.Add(rec("P0", 0, time.Second, time.Millisecond, 2))
	s.SetClientHealth(ClientHealth{CPUCores: 1, CPUUtilization: 0.97})
	if res := s.Result(); !res.Client.Bound || !strings.Contains(res.Client.Reasons[0], "CPU saturated") {
		t.Fatalf("client %+v", res.Client)
	}
}

// unsentRec is a request due at t0+at that the client gave up, never sent,
// after waiting wait.
func unsentRec(at, wait time.Duration) *Record {
	s := t0.Add(at)
	return &Record{Profile: "P0", Scheduled: s, Done: s.Add(wait), Status: StatusCancelled, Error: "cancelled before sending: measured window ended"}
}

// TestClientBoundByUnsentRequests: a client that stalls sends nothing, so
// it leaves no dispatch-lag sample; the requests it still owed when the run
// stopped, each due for longer than the lag limit, mark it client-bound
// once they are more than the share the lag p99 tolerates.
func TestClientBoundByUnsentRequests(t *testing.T) {
	const limit = 10 * time.Millisecond
	tests := []struct {
		name       string
		sent       int             // on time
		unsent     []time.Duration // waits of the unsent requests
		bound      bool
		unsentLate int64
		reason     string
	}{
		{name: "stalled: nothing sent, every user owes a request", unsent: repeatWait(5*time.Second, 4),
			bound: true, unsentLate: 4, reason: "4 of 4 requests due in the window never sent (waiting up to 5s, over 10ms)"},
		{name: "stalled part way", sent: 200, unsent: append(repeatWait(3*time.Second, 99), 12*time.Second),
			bound: true, unsentLate: 100, reason: "100 of 300 requests due in the window never sent (waiting up to 12s, over 10ms)"},
		{name: "healthy: due in the last milliseconds before the end", sent: 200, unsent: repeatWait(3*time.Millisecond, 20)},
		{name: "one late among many is within the p99 share", sent: 199, unsent: []time.Duration{time.Second}, unsentLate: 1},
		{name: "two late among 200 are the share, three over it", sent: 197, unsent: []time.Duration{time.Second, 20 * time.Millisecond, 11 * time.Millisecond},
			bound: true, unsentLate: 3, reason: "3 of 200 requests due in the window never sent (waiting up to 1s, over 10ms)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSummary(DefaultSLA(), Window{Start: t0, End: t0.Add(time.Minute)}, WithClientBoundLag(limit))
			for i := range tc.sent {
				s.Add(rec("P0", time.Duration(i)*time.Millisecond, 100*time.Millisecond, 10*time.Millisecond, 5))
			}
			for i, w := range tc.unsent {
				s.Add(unsentRec(time.Duration(i)*time.Millisecond, w))
			}
			s.SetClientHealth(ClientHealth{CPUCores: 1, CPUUtilization: 0.02}) // idle: the CPU check sees nothing
			c := s.Result().Client
			if c.Bound != tc.bound || c.UnsentLate != tc.unsentLate || c.Unsent != int64(len(tc.unsent)) {
				t.Fatalf("bound %v unsent %d late %d (want %v, %d, %d): %v", c.Bound, c.Unsent, c.UnsentLate, tc.bound, len(tc.unsent), tc.unsentLate, c.Reasons)
			}
			if tc.bound && (len(c.Reasons) != 1 || c.Reasons[0] != tc.reason) {
				t.Fatalf("reasons %q, want [%q]", c.Reasons, tc.reason)
			}
		})
	}
}

func repeatWait(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestInferredWindowAndGoodput(t *testing.T) {
	s := NewSummary(DefaultSLA(), Window{})
	warm := rec("P0", 0, time.Millisecond, time.Millisecond, 2)
	warm.Warmup = true
	s.Add(warm)
	s.Add(rec("P0", time.Second, time.Second, 10*time.Millisecond, 2))     // good
	s.Add(rec("P0", 2*time.Second, 3*time.Second, 10*time.Millisecond, 2)) // TTFT too slow
	res := s.Result()
	if !res.Window.Inferred || !res.Window.Start.Equal(t0.Add(time.Second)) || res.Excluded != 1 {
		t.Fatalf("window %+v excluded %d", res.Window, res.Excluded)
	}
	if res.Overall.GoodRequests != 1 {
		t.Fatalf("good %d, want 1", res.Overall.GoodRequests)
	}
	if q, ok := s.Quantile("P0", MetricTTFT, 100); !ok || q != 3*time.Second {
		t.Fatalf("quantile %v %v", q, ok)
	}
}

func BenchmarkSummaryAdd(b *testing.B) {
	s := NewSummary(DefaultSLA(), Window{})
	r := rec("P0", 0, time.Second, 20*time.Millisecond, 400)
	b.ReportAllocs()
	for b.Loop() {
		s.Add(r)
	}
}

func TestWriteText(t *testing.T) {
	s := NewSummary(DefaultSLA(), Window{Start: t0, End: t0.Add(time.Second)})
	s.Add(rec("P0", 0, 500*time.Millisecond, 20*time.Millisecond, 5))
	s.Add(failed("P0", 0, StatusHTTPError, 503))
	s.SetClientHealth(ClientHealth{CPUCores: 2, CPUUtilization: 0.5})
	var b strings.Builder
	if err := WriteText(&b, s.Result()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P0", "overall", "500ms", "HTTP 503: 1", "http_error 1", "CPU 50% of 2 cores", "fail: P0 error rate 50% > 1%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestWriteTextWithoutWindow(t *testing.T) {
	s := NewSummary(DefaultSLA(), Window{})
	t0 := time.Unix(100, 0)
	s.Add(&Record{Profile: "P0", Scheduled: t0, Sent: t0, Done: t0.Add(time.Second), Status: StatusOK, Warmup: true})
	var b strings.Builder
	if err := WriteText(&b, s.Result()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "0001-01-01") || !strings.Contains(b.String(), "no records in a measured window (1 outside it") {
		t.Errorf("all-warm-up summary:\n%s", b.String())
	}
}

// TestITLIsPerToken checks that a chunk carrying several tokens spreads its
// gap over them: one 80 ms gap before a 4-token chunk is four 20 ms tokens,
// both in the ITL distribution and in a request's goodput judgement.
func TestITLIsPerToken(t *testing.T) {
	sla := DefaultSLA() // itl p95 <= 100 ms
	sla.ITL.Max = 50 * time.Millisecond
	s := NewSummary(sla, Window{})
	r := rec("P0", 0, 100*time.Millisecond, 20*time.Millisecond, 2)
	r.TokenGapsUS = []int64{20000, 80000, 30000}
	r.TokenCounts = []int{1, 4, 0} // 0: malformed, counts as one token
	r.OutputTokens = 7
	r.Done = r.FirstToken.Add(130 * time.Millisecond)
	s.Add(r)
	o := s.Result().Overall
	if o.ITL.Count != 6 || !near(o.ITL.Max, 30) || !near(o.ITL.P50, 20) {
		t.Fatalf("itl %+v, want 6 per-token samples, p50 20 ms, max 30 ms", o.ITL)
	}
	if o.GoodRequests != 1 {
		t.Fatalf("good %d: a request with 20 ms per token failed a 50 ms ITL clause", o.GoodRequests)
	}
	if r.ChunkTokens(1) != 4 || r.ChunkTokens(2) != 1 || r.ChunkTokens(5) != 1 {
		t.Fatalf("chunk tokens %d %d %d", r.ChunkTokens(1), r.ChunkTokens(2), r.ChunkTokens(5))
	}
}

// TestCancelledAreNotErrors checks that requests cut off by the window end
// or Ctrl-C (status cancelled, often after an HTTP 200 and some tokens)
// count neither in the error rate nor in the errors line.
func TestCancelledAreNotErrors(t *testing.T) {
	sla := DefaultSLA()
	sla.Scope = SLAScopeOverall
	s := NewSummary(sla, Window{Start: t0, End: t0.Add(time.Minute)})
	for i := range 30 {
		s.Add(rec("P0", time.Duration(i)*time.Millisecond, 100*time.Millisecond, 20*time.Millisecond, 5))
	}
	for i := range 10 { // mid-stream at the window end, and before sending
		c := rec("P0", 50*time.Second, 100*time.Millisecond, 20*time.Millisecond, 3)
		c.Status, c.HTTPStatus, c.Error = StatusCancelled, 200, "measured window ended"
		if i%2 == 1 {
			c.HTTPStatus, c.FirstToken, c.TokenGapsUS, c.Sent = 0, time.Time{}, nil, time.Time{}
		}
		s.Add(c)
	}
	res := s.Result()
	o := res.Overall
	if o.Errors != 0 || o.ErrorRate != 0 || len(o.ErrorsByClass) != 0 || len(o.ErrorsByHTTPStatus) != 0 || o.Cancelled != 10 {
		t.Fatalf("cancelled counted as errors: %+v", o)
	}
	if !res.SLA.Pass {
		t.Fatalf("verdict %v", res.SLA)
	}
	var b strings.Builder
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "errors:") || strings.Contains(b.String(), "HTTP 200") {
		t.Fatalf("text reports cancelled requests as errors:\n%s", b.String())
	}
	// With a real error the line names only it.
	s.Add(failed("P0", time.Second, StatusHTTPError, 503))
	b.Reset()
	if err := WriteText(&b, s.Result()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "errors: http_error 1, HTTP 503: 1 (rate 3.23%)") || strings.Contains(b.String(), "HTTP 200") {
		t.Fatalf("errors line:\n%s", b.String())
	}
}

func TestMinSamples(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 2}, {90, 10}, {95, 20}, {99, 100}, {99.9, 1000}, {100, 1}, {0, 1}} {
		if got := MinSamples(c.p); got != c.want {
			t.Errorf("MinSamples(%v) = %d, want %d", c.p, got, c.want)
		}
	}
}

func TestInsufficientSamples(t *testing.T) {
	fast := func(n int) []*Record { return repeat(rec("P0", 0, time.Second, 50*time.Millisecond, 3), n) }
	slow := func(n int) []*Record { return repeat(rec("P0", 0, 3*time.Second, 50*time.Millisecond, 2), n) }
	cases := []struct {
		name    string
		sla     func(*SLA)
		records []*Record
		state   VerdictState
		text    string
	}{
		{name: "p95 with 19 requests", records: fast(19), state: VerdictInsufficient,
			text: "insufficient samples: P0 ttft p95: 19 samples, needs 20"},
		{name: "a slow p95 with 19 requests is not a fail either", records: slow(19), state: VerdictInsufficient,
			text: "insufficient samples: P0 ttft p95: 19 samples, needs 20"},
		{name: "p95 with 20 requests", records: fast(20), state: VerdictPass, text: "pass"},
		{name: "p95 with 20 slow requests", records: slow(20), state: VerdictFail, text: "fail: P0 ttft p95 3s > 2s"},
		{name: "p99 with 99 requests", sla: func(s *SLA) { s.TTFT.Percentile = 99 }, records: fast(99), state: VerdictInsufficient,
			text: "insufficient samples: P0 ttft p99: 99 samples, needs 100"},
		{name: "p99 with 100 requests", sla: func(s *SLA) { s.TTFT.Percentile = 99 }, records: fast(100), state: VerdictPass, text: "pass"},
		{name: "a failed clause decides over an unjudged one",
			sla:     func(s *SLA) { s.ITL = LatencyClause{Percentile: 95, Max: 10 * time.Millisecond} },
			records: fast(19), state: VerdictFail, text: "fail: P0 itl p95 50ms > 10ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sla := DefaultSLA()
			sla.ITL.Max = 0
			if c.sla != nil {
				c.sla(&sla)
			}
			s := NewSummary(sla, Window{})
			for _, r := range c.records {
				s.Add(r)
			}
			v := s.EvaluateSLA()
			if v.State != c.state || v.Pass != (c.state == VerdictPass) || v.String() != c.text {
				t.Fatalf("verdict %s (pass %v, %q), want %s %q", v.State, v.Pass, v.String(), c.state, c.text)
			}
			if c.state == VerdictInsufficient && (len(v.Violations) != 0 || v.Insufficient[0].Samples == 0 || v.First() != v.Insufficient[0].Message) {
				t.Fatalf("insufficient verdict %+v", v)
			}
		})
	}
}

func TestOverloaded(t *testing.T) {
	queued := func(profile string, n int) []*Record {
		out := make([]*Record, n)
		for i := range out {
			s := t0.Add(time.Duration(i) * time.Second)
			out[i] = &Record{Profile: profile, Scheduled: s, Sent: s, Done: t0.Add(time.Minute), Status: StatusCancelled,
				Error: "measured window ended"}
		}
		return out
	}
	streaming := rec("P1", 0, 40*time.Second, 100*time.Millisecond, 50)
	streaming.Status = StatusCancelled
	cases := []struct {
		name    string
		scope   string
		records []*Record
		first   string
		text    string
	}{
		{name: "every request still queued", scope: SLAScopeOverall, records: queued("P0", 30),
			first: "overall: no request sent in the measured window completed, 30 outstanding at its end, all still waiting for a first token"},
		{name: "streaming but none completed", scope: SLAScopeOverall, records: append(queued("P0", 3), streaming),
			first: "overall: no request sent in the measured window completed, 4 outstanding at its end (3 without a first token)"},
		{name: "one profile overloaded decides", scope: SLAScopePerProfile,
			records: append(repeat(rec("P0", 0, 3*time.Second, 10*time.Millisecond, 3), 20), queued("P2", 5)...),
			first:   "P2: no request sent in the measured window completed, 5 outstanding at its end, all still waiting for a first token",
			text:    "fail: overloaded: P0 ttft p95 3s > 2s; P2: no request sent in the measured window completed, 5 outstanding at its end, all still waiting for a first token"},
		{name: "errors still count", scope: SLAScopeOverall, records: append(queued("P0", 3), failed("P0", 0, StatusHTTPError, 503)),
			first: "overall: no request sent in the measured window completed, 3 outstanding at its end, all still waiting for a first token",
			text:  "fail: overloaded: overall: no request sent in the measured window completed, 3 outstanding at its end, all still waiting for a first token; overall error rate 100% > 1%"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sla := DefaultSLA()
			sla.Scope = c.scope
			s := NewSummary(sla, Window{Start: t0, End: t0.Add(time.Minute)})
			for _, r := range c.records {
				s.Add(r)
			}
			res := s.Result()
			v := res.SLA
			if v.State != VerdictOverloaded || v.Pass || v.First() != c.first {
				t.Fatalf("verdict %s (pass %v), first %q, want overloaded, %q", v.State, v.Pass, v.First(), c.first)
			}
			if c.text == "" {
				c.text = "fail: overloaded: " + c.first
			}
			if v.String() != c.text {
				t.Fatalf("String %q, want %q", v.String(), c.text)
			}
			var b strings.Builder
			if err := WriteText(&b, res); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "): fail: overloaded: ") {
				t.Fatalf("text lacks the overload:\n%s", b.String())
			}
		})
	}
	// An empty window is not an overload.
	if v := NewSummary(DefaultSLA(), Window{}).EvaluateSLA(); v.State != VerdictNoRequests || v.Pass {
		t.Fatalf("empty window: %s", v.State)
	}
}

// TestVerdictOutcomeOfOldSummaries checks that a verdict decoded from a
// summary.json written before Verdict.State existed still reads right.
func TestVerdictOutcomeOfOldSummaries(t *testing.T) {
	for _, c := range []struct {
		in   string
		want VerdictState
		text string
	}{
		{`{"pass":true,"scope":"overall"}`, VerdictPass, "pass"},
		{`{"pass":false,"scope":"overall","violations":[{"scope":"P0","clause":"ttft p95","message":"P0 ttft p95 3s > 2s"}]}`, VerdictFail, "fail: P0 ttft p95 3s > 2s"},
	} {
		var v Verdict
		if err := json.Unmarshal([]byte(c.in), &v); err != nil {
			t.Fatal(err)
		}
		if v.Outcome() != c.want || v.String() != c.text {
			t.Errorf("%s: outcome %s %q", c.in, v.Outcome(), v.String())
		}
	}
}

func TestPlanDrift(t *testing.T) {
	s := NewSummary(DefaultSLA(), Window{})
	// P0: live prompts 2 % longer than planned (template overhead), full
	// replies. P1: live prompts 30 % shorter, half the output reasoning.
	for i := range 20 {
		r := rec("P0", time.Duration(i)*time.Millisecond, time.Second, 10*time.Millisecond, 10)
		r.PromptTokensTarget, r.PromptTokens, r.MaxTokens = 1000, 1020, 10
		s.Add(r)
		r = rec("P1", time.Duration(i)*time.Millisecond, time.Second, 10*time.Millisecond, 10)
		r.PromptTokensTarget, r.PromptTokens, r.MaxTokens, r.ReasoningTokens = 1000, 700, 20, 5
		if i == 0 {
			r.PromptTokens = 400 // one outlier: -60 %
		}
		s.Add(r)
	}
	// Requests without a server count, and failed ones, are not judged.
	noUsage := rec("P0", 0, time.Second, 10*time.Millisecond, 10)
	noUsage.PromptTokens = 0
	s.Add(noUsage)
	bad := failed("P1", 0, StatusStreamError, 200)
	bad.PromptTokensTarget, bad.PromptTokens = 1000, 5000
	s.Add(bad)

	res := s.Result()
	p0, p1 := res.Profiles[0].Drift, res.Profiles[1].Drift
	if p0.Requests != 20 || !near(p0.PromptMean, 0.02) || !near(p0.PromptAbsP95, 0.02) || !near(p0.OutputFill, 1) || p0.ReasoningShare != 0 {
		t.Errorf("P0 drift %+v", p0)
	}
	if p1.Requests != 20 || !near(p1.PromptMean, -0.315) || !near(p1.PromptAbsP95, 0.3) || !near(p1.OutputFill, 0.5) || !near(p1.ReasoningShare, 0.5) {
		t.Errorf("P1 drift %+v", p1)
	}
	if !res.Drift.Flagged || len(res.Drift.Reasons) != 1 || res.Drift.Limit != DefaultPromptDriftLimit ||
		res.Drift.Reasons[0] != "P1 prompt drift -31.5% (mean over 20 requests, |drift| p95 30%) beyond ±10%" {
		t.Fatalf("drift report %+v", res.Drift)
	}
	var b strings.Builder
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plan drift (server vs planned): P0 prompt +2% (|p95| 2%), output 100% of max_tokens; P1 prompt -31.5% (|p95| 30%), output 50% of max_tokens, 50% reasoning",
		"WARNING: prompt drift, the run measured other context lengths than the plan: P1 prompt drift -31.5%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	// A wider limit flags nothing.
	s2 := NewSummary(DefaultSLA(), Window{}, WithPromptDriftLimit(0.5))
	r := rec("P1", 0, time.Second, 10*time.Millisecond, 10)
	r.PromptTokensTarget, r.PromptTokens = 1000, 700
	s2.Add(r)
	if res := s2.Result(); res.Drift.Flagged || res.Drift.Limit != 0.5 {
		t.Fatalf("limit 50%%: %+v", res.Drift)
	}
}
