package sim_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// step is one request as the schedule sees it.
type step struct {
	session, turn int
	offset        time.Duration // scheduled send time since the run's start
}

// replaySchedule checks that recs, one executor's records, are exactly what
// workload.Schedule prescribes given the completions the executor observed:
// for each user, the same (session, turn) in order, scheduled at the
// schedule's time (within the nanosecond of rounding) with its warm-up flag,
// and nothing after the schedule stopped the user. endSlack is how close to
// the window's end a user may stop early (a wall-clock runner's timer race).
// It returns each user's steps.
func replaySchedule(t *testing.T, name string, o workload.ScheduleOptions, src workload.Source, origin time.Time, recs []*result.Record, endSlack time.Duration) [][]step {
	t.Helper()
	sched, err := workload.NewSchedule(src, o)
	if err != nil {
		t.Fatal(err)
	}
	byUser := make([][]*result.Record, o.Users)
	for _, r := range recs {
		byUser[r.User] = append(byUser[r.User], r)
	}
	_, end := sched.Window()
	steps := make([][]step, o.Users)
	for u, rs := range byUser {
		slices.SortStableFunc(rs, func(a, b *result.Record) int { return a.Scheduled.Compare(b.Scheduled) })
		cur := sched.User(u)
		stopped := false
		for i, r := range rs {
			if stopped {
				t.Fatalf("%s: user %d sent %s after a cancelled request", name, u, r.RequestID)
			}
			st, ok, err := cur.Next()
			if err != nil || !ok {
				t.Fatalf("%s: user %d sent %s, but the schedule had stopped it (ok %v, err %v)", name, u, r.RequestID, ok, err)
			}
			got := step{r.Session, r.Turn, r.Scheduled.Sub(origin)}
			want := step{st.Session, st.Turn.Index, workload.Offset(st.At)}
			if d := got.offset - want.offset; got.session != want.session || got.turn != want.turn || d < -1 || d > 1 || r.Warmup != st.Warmup {
				t.Fatalf("%s: user %d request %d: %+v warm-up %v, schedule says %+v warm-up %v", name, u, i, got, r.Warmup, want, st.Warmup)
			}
			steps[u] = append(steps[u], got)
			if r.Status == result.StatusCancelled { // in flight at the end
				stopped = true
				continue
			}
			cur.Done(r.Done.Sub(origin).Seconds(), r.Status == result.StatusOK)
		}
		if at, due := cur.Due(); !stopped && due && workload.Offset(end-at) > endSlack {
			t.Errorf("%s: user %d stopped with a turn due at %v, before the end at %v", name, u, workload.Offset(at), workload.Offset(end))
		}
	}
	return steps
}

// TestExecutorsFollowOneSchedule runs the same small workload through the
// HTTP load runner (against a near-instant test server) and the virtual
// executor, and checks both against workload.Schedule. Response times
// differ between the two, so the scheduled offsets agree only where they do
// not depend on them: each user's first turn (its ramp slot) and, given each
// executor's own completions, every later one.
func TestExecutorsFollowOneSchedule(t *testing.T) {
	src := loadgen.SyntheticSource{Turns: 3, PrefixTokens: 20, NewTokens: 5, MaxTokens: 4, ThinkTime: 120 * time.Millisecond}
	o := workload.ScheduleOptions{Users: 4, Ramp: 100 * time.Millisecond, Warmup: 200 * time.Millisecond, Duration: 800 * time.Millisecond, ThinkTimeScale: 0.5}
	dep, err := sim.NewDeployment(sim.ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, faults := range []float64{0, 0.3} {
		t.Run(fmt.Sprintf("faults %v", faults), func(t *testing.T) {
			// Live: HTTP, wall clock.
			srv := testserver.Start(testserver.Config{TokenInterval: 200 * time.Microsecond,
				FaultRate: faults, Faults: []testserver.Fault{testserver.Fault500}, Seed: 1})
			defer srv.Close()
			tr := loadgen.NewTransport(o.Users)
			defer tr.CloseIdleConnections()
			run, err := loadgen.New(loadgen.Options{
				Target: srv.URL, Users: o.Users, Ramp: o.Ramp, Warmup: o.Warmup, Duration: o.Duration, ThinkTimeScale: o.ThinkTimeScale,
				RunID: "live", Renderer: loadgen.FillerRenderer{}, HTTPClient: &http.Client{Transport: tr},
			})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var live []*result.Record
			rep, err := run.Run(context.Background(), src, result.SinkFunc(func(r *result.Record) error {
				mu.Lock()
				live = append(live, r)
				mu.Unlock()
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			// Virtual: the event heap.
			var virtual []*result.Record
			st, err := sim.RunVirtual(context.Background(), sim.Options{
				Deployment: dep, Users: o.Users, Ramp: o.Ramp, Warmup: o.Warmup, Duration: o.Duration, ThinkTimeScale: o.ThinkTimeScale,
				RunID: "virtual", ErrorRate: faults, Seed: 1, SeriesInterval: -1,
			}, src, result.SinkFunc(func(r *result.Record) error { virtual = append(virtual, r); return nil }))
			if err != nil {
				t.Fatal(err)
			}

			liveSteps := replaySchedule(t, "live", o, src, rep.Start, live, 20*time.Millisecond)
			virtualSteps := replaySchedule(t, "virtual", o, src, st.Start, virtual, 0)
			var errs int
			for _, r := range append(slices.Clone(live), virtual...) {
				if r.Status == result.StatusHTTPError {
					errs++
				}
			}
			if faults > 0 && errs == 0 {
				t.Error("no failed turns: the abandon-the-session rule went untested")
			}
			for u := range o.Users {
				l, v := liveSteps[u], virtualSteps[u]
				if len(l) < 3 || len(v) < 3 {
					t.Fatalf("user %d sent %d live and %d virtual requests; want a session's worth each", u, len(l), len(v))
				}
				if l[0] != v[0] {
					t.Errorf("user %d's first request: live %+v, virtual %+v", u, l[0], v[0])
				}
				if faults > 0 {
					continue // the faults hit different turns
				}
				for i := range min(len(l), len(v)) {
					if l[i].session != v[i].session || l[i].turn != v[i].turn {
						t.Errorf("user %d request %d: live session %d turn %d, virtual session %d turn %d", u, i, l[i].session, l[i].turn, v[i].session, v[i].turn)
					}
				}
			}
		})
	}
}
