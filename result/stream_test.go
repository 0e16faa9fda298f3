package result

import (
	"strings"
	"testing"
	"time"
)

// burstyRecord is a reply a buffering proxy delivered: most chunks read
// together with the one before (0 µs), a long wait between bursts.
func burstyRecord(t0 time.Time, user int) *Record {
	gaps := make([]int64, 30)
	for i := range gaps {
		if i%10 == 9 {
			gaps[i] = 200_000 // the proxy's next flush
		}
	}
	return &Record{User: user, Profile: "P0", Status: StatusOK, Scheduled: t0, Sent: t0,
		FirstToken: t0.Add(40 * time.Millisecond), Done: t0.Add(700 * time.Millisecond), OutputTokens: 31, TokenGapsUS: gaps}
}

// A run read in bursts has an unmeasurable ITL: the stream report says so
// and why, the ITL clause is unjudged (no pass, never a provisional one),
// and the goodput does not count the bursts against the requests.
func TestBurstyRunLeavesITLUnjudged(t *testing.T) {
	sla := SLA{TTFT: LatencyClause{Percentile: 50, Max: time.Second}, ITL: LatencyClause{Percentile: 95, Max: 50 * time.Millisecond}}
	s := NewSummary(sla, Window{})
	t0 := time.Unix(1000, 0)
	for i := range 30 {
		s.Add(burstyRecord(t0.Add(time.Duration(i)*time.Second), i))
	}
	res := s.Result()
	if !res.Stream.ITLUnmeasurable || !strings.Contains(res.Stream.Reason, "http-no-delay") {
		t.Fatalf("stream %+v: want ITL unmeasurable naming the proxy option", res.Stream)
	}
	if res.SLA.Pass || res.SLA.FewSamplesPass() || len(res.SLA.Violations) != 0 {
		t.Errorf("verdict %+v: want the ITL clause neither met nor violated, and no provisional pass", res.SLA)
	}
	if res.Overall.GoodRequests != 30 {
		t.Errorf("goodput counts %d of 30 requests: the ITL the client could not measure judged them", res.Overall.GoodRequests)
	}
}
