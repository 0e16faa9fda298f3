package workload

import (
	"math"
	"testing"
	"time"
)

// A Bailian trace's chained turns (a follow-up carries its parent's
// blocks) replay at their recorded timestamps, compressed by a factor:
// each request is due at (timestamp − the first's) / compression, the
// follow-up at its own time, not after its parent's reply, and its prompt
// starts with its parent's blocks so the prefix cache sees the chain.
func TestBailianChainReplaysAtItsTimestampsCompressed(t *testing.T) {
	im, err := ReadBlockTrace(openTestdata(t, "bailian_trace.jsonl"), "bailian_trace.jsonl", testTokenizer(t), BailianBlockTokens, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSchedule(im, ScheduleOptions{Duration: 10 * time.Second, ThinkTimeScale: 1, Arrivals: &Arrivals{Trace: true, Compression: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Users() != 3 {
		t.Fatalf("%d sessions scheduled, want the trace's 3 requests", s.Users())
	}
	for u, ts := range []float64{61.114, 75.002, 75.500} {
		want := (ts - 61.114) / 10
		if got := s.Start(u); math.Abs(got-want) > 1e-6 {
			t.Errorf("request %d due at %.4f s, want its timestamp compressed: %.4f s", u, got, want)
		}
		cur := s.User(u)
		if due, ok := cur.Due(); !ok || math.Abs(due-want) > 1e-6 {
			t.Errorf("request %d: first turn due at %v (%v), want %.4f", u, due, ok, want)
		}
	}
	parent, err := im.Session(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	child, err := im.Session(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, c := parent.Turns[0].NewContent, child.Turns[0].NewContent
	if len(c) < 2 || c[0].Key != p[0].Key || c[1].Key != p[1].Key || c[2].Key == p[2].Key {
		t.Errorf("the follow-up's blocks %v do not start with its parent's first two %v (hash ids 1089, 1090) and then differ", c, p)
	}
}
