package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A record's token gaps copied off its replica's log of steps are those
// of its tokens' own times: for requests that skip steps (a preemption, a
// step whose budget a prefill took) and that outlive many trims of the
// log.
func TestTokenGapsFromTheStepLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e := &Engine{}
	r := &runner{c: &Cluster{engines: []*Engine{e}}, logs: make([]stepLog, 1)}
	type live struct {
		req   *Request
		times []float64 // its tokens' step ends
		left  int
	}
	var reqs []*live
	now, checked, skipped := 0.0, 0, 0
	var buf []int64
	for step := 0; step < 20000; step++ {
		if rng.IntN(8) == 0 {
			// a new request: long ones keep the log's first steps for
			// thousands of steps
			n := 2 + rng.IntN(60)
			if rng.IntN(20) == 0 {
				n = 3000 + rng.IntN(3000)
			}
			reqs = append(reqs, &live{req: NewRequest(), left: n})
		}
		now += 0.005 + rng.Float64()*0.05
		at := r.logStep(0, now)
		var done []*live
		for _, l := range reqs {
			q := l.req
			if q.generated > 0 && rng.IntN(10) == 0 {
				continue // no token in this step
			}
			q.generated++
			if q.generated == 1 {
				e.running = append(e.running, q)
			}
			q.noteToken(at)
			l.times = append(l.times, now)
			if l.left--; l.left == 0 {
				done = append(done, l)
			}
		}
		for _, l := range done {
			want := make([]int64, len(l.times)-1)
			for i := range want {
				want[i] = gapUS(l.times[i+1], l.times[i])
			}
			// into the last record's array, as a borrowing sink's run does
			got := r.tokenGaps(buf, 0, l.req)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: request of %d tokens (%d skips): gaps %v, want %v", step, len(l.times), len(l.req.skips), got, want)
			}
			buf = got[:0]
			checked++
			skipped += len(l.req.skips)
			e.running = slices.DeleteFunc(e.running, func(q *Request) bool { return q == l.req })
			reqs = slices.DeleteFunc(reqs, func(x *live) bool { return x == l })
		}
	}
	if lg := r.logs[0]; checked < 1000 || skipped < 1000 || lg.base == 0 || len(lg.ends) > 16384 {
		t.Fatalf("%d requests checked, %d skips, log from step %d holding %d steps: the test did not reach what it tests", checked, skipped, lg.base, len(lg.ends))
	}
}
