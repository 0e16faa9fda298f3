package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// dayWorkload is a multi-turn coding session small enough for a day in
// seconds: 2k tokens growing 600 a turn to 12k, 5 s think times.
func dayWorkload(t testing.TB) workload.Workload {
	t.Helper()
	s := workload.DefaultSpec()
	s.Profiles = []workload.Profile{{
		Name: "coder", Weight: 1,
		ContextStart: workload.Lognormal(2000, 0.3).Clip(500, 6000), MaxContext: 12000,
		Growth:       workload.Lognormal(600, 0.4).Clip(100, 3000),
		OutputTokens: workload.Lognormal(200, 0.5).Clip(16, 1024),
		ThinkTime:    workload.DistSpec{Kind: workload.DistExponential, Mean: 5},
		AtMax:        "new-session",
	}}
	w, err := workload.OpenForRun(s, 131072, false)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// rampDay is a compressed working day: quiet, a ramp to the peak, a
// plateau, a fall; sessions per second.
func rampDay(peak float64) *workload.Arrivals {
	return &workload.Arrivals{Seed: 5, Rate: []workload.RatePoint{
		{At: 0, PerSecond: peak / 10}, {At: 5 * time.Minute, PerSecond: peak / 10},
		{At: 10 * time.Minute, PerSecond: peak}, {At: 20 * time.Minute, PerSecond: peak},
		{At: 25 * time.Minute, PerSecond: peak / 10},
	}}
}

type dayRun struct {
	st   *RunStats
	rows []result.AttainmentRow
}

func runDay(t testing.TB, replicas int, a *Autoscale, arr *workload.Arrivals, src workload.Source) dayRun {
	t.Helper()
	epoch := time.Unix(0, 0).UTC()
	const length = 30 * time.Minute
	att := result.NewAttainment(issueSLA(), result.Window{Start: epoch, End: epoch.Add(length)}, time.Minute)
	st, err := RunVirtual(context.Background(), Options{Deployment: issueDeployment(t, replicas, Fleet{}), Arrivals: arr,
		Duration: length, ThinkTimeScale: 1, Seed: 1, Autoscale: a, SeriesInterval: -1}, src, att)
	if err != nil {
		t.Fatal(err)
	}
	return dayRun{st: st, rows: att.Rows()}
}

func (d dayRun) gpuHours() float64 {
	if d.st.Scale == nil {
		return math.NaN()
	}
	return d.st.Scale.GPUSeconds / 3600
}

// The day's properties (issue 33) on a compressed working day that four
// gpt-oss-20b replicas on H100s carry at its peak of 2 sessions a second
// (about 90 in progress). Noise: the same day with another start-up time
// routes requests in another order, and the attainment of runs that
// should tie differs by up to a point (0.2 points measured between 0 s and
// 2 min of start-up, 2026-12-02); the properties allow that point.
const attainmentNoise = 0.01

// Zero start-up time and target tracking reach the static peak fleet's
// attainment with fewer GPU-hours.
func TestPropertyTargetTrackingMatchesStaticWithFewerGPUHours(t *testing.T) {
	if testing.Short() {
		t.Skip("two simulated days of 30 minutes (~8 s)")
	}
	src := dayWorkload(t)
	static := runDay(t, 4, &Autoscale{Policy: Static{N: 4}, MinReplicas: 1, InitialReplicas: 4}, rampDay(2), src)
	tt := runDay(t, 4, &Autoscale{Policy: TargetTracking{UsersPerReplica: 20}, MinReplicas: 1}, rampDay(2), src)
	s, a := static.rows[0], tt.rows[0]
	t.Logf("static: %.1f %% of requests, %.1f %% of minutes, %.2f GPU-h; target tracking: %.1f %%, %.1f %%, %.2f GPU-h (peak %d replicas)",
		100*s.RequestShare, 100*s.MinuteShare, static.gpuHours(), 100*a.RequestShare, 100*a.MinuteShare, tt.gpuHours(), tt.st.Scale.PeakReplicas)
	if a.RequestShare < s.RequestShare-attainmentNoise {
		t.Errorf("target tracking met the SLA for %.1f %% of requests, static for %.1f %%", 100*a.RequestShare, 100*s.RequestShare)
	}
	if !(tt.gpuHours() < static.gpuHours()) {
		t.Errorf("target tracking held %.2f GPU-hours, static %.2f", tt.gpuHours(), static.gpuHours())
	}
	if static.gpuHours() != 4*0.5 {
		t.Errorf("static: %.3f GPU-hours, want 4 GPUs × half an hour", static.gpuHours())
	}
}

// A longer start-up never improves attainment: the replicas a ramp asks
// for serve later.
func TestPropertyLongerStartupNeverImprovesAttainment(t *testing.T) {
	if testing.Short() {
		t.Skip("three simulated days of 30 minutes (~10 s)")
	}
	src := dayWorkload(t)
	prev := math.Inf(1)
	for _, startup := range []time.Duration{0, 2 * time.Minute, 10 * time.Minute} {
		d := runDay(t, 4, &Autoscale{Policy: TargetTracking{UsersPerReplica: 20}, MinReplicas: 1, Startup: startup}, rampDay(2), src)
		share := d.rows[0].RequestShare
		t.Logf("start-up %v: %.2f %% of requests, %.1f %% of minutes, %.2f GPU-h", startup, 100*share, 100*d.rows[0].MinuteShare, d.gpuHours())
		if share > prev+attainmentNoise {
			t.Errorf("start-up %v: %.2f %% of requests within the SLA, more than %.2f %% with a shorter one", startup, 100*share, 100*prev)
		}
		prev = math.Min(prev, share)
	}
}

// The replicas follow the policy: they start Startup after the decision,
// never exceed the bounds, and a drained replica stops.
func TestAutoscaleLifecycle(t *testing.T) {
	src := dayWorkload(t)
	const startup = 90 * time.Second
	d := runDay(t, 4, &Autoscale{Policy: TargetTracking{UsersPerReplica: 20}, MinReplicas: 1, MaxReplicas: 3, Startup: startup}, rampDay(2), src)
	ev := d.st.Scale.Events
	if len(ev) < 3 || ev[0].At != 0 || ev[0].Serving != 1 {
		t.Fatalf("events %+v: want one replica serving at 0 and changes after", ev)
	}
	firstStart, firstGrow := math.Inf(1), math.Inf(1)
	grew, shrank := false, false
	for i, e := range ev {
		if e.Serving+e.Starting > 3 || e.Serving+e.Starting+e.Draining > 4 || e.Serving < 1 {
			t.Fatalf("event %d %+v breaks the bounds [1, 3]", i, e)
		}
		if e.Starting > 0 {
			firstStart = math.Min(firstStart, e.At)
		}
		if e.Serving > 1 {
			grew = true
			firstGrow = math.Min(firstGrow, e.At)
		}
		if e.Draining > 0 {
			shrank = true
		}
	}
	if firstGrow-firstStart < startup.Seconds()-1e-9 {
		t.Errorf("the first added replica served %.0f s after it started, start-up is %v", firstGrow-firstStart, startup)
	}
	if !grew || !shrank {
		t.Errorf("the ramp day neither grew (%v) nor drained (%v) the fleet: %+v", grew, shrank, ev)
	}
	if last := ev[len(ev)-1]; last.Draining != 0 && last.At < 29*60 {
		t.Errorf("a draining replica never stopped: %+v", last)
	}
}

func TestAutoscaleBadBounds(t *testing.T) {
	src := dayWorkload(t)
	for _, a := range []*Autoscale{
		{Policy: Static{N: 2}, MinReplicas: 0},
		{Policy: Static{N: 2}, MinReplicas: 3, MaxReplicas: 2},
		{Policy: Static{N: 2}, MinReplicas: 1, MaxReplicas: 5},
		{Policy: TargetTracking{}, MinReplicas: 1},
		{Policy: &HPA{Metric: "gpu", Target: 1}, MinReplicas: 1},
		{Policy: &HPA{Metric: MetricKVCacheUsage, Target: 2}, MinReplicas: 1},
	} {
		_, err := RunVirtual(context.Background(), Options{Deployment: issueDeployment(t, 4, Fleet{}), Arrivals: rampDay(1),
			Duration: time.Minute, Autoscale: a}, src, result.SinkFunc(func(*result.Record) error { return nil }))
		if err == nil {
			t.Errorf("%+v ran", a)
		}
	}
}
