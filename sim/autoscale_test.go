package sim

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// dayWorkload is a multi-turn coding session small enough for a day in
// seconds: 2k tokens growing 600 a turn to 12k, 5 s think times.
func dayWorkload(t testing.TB) workload.Workload { return dayWorkloadSeed(t, 0) }

// dayWorkloadSeed is dayWorkload with workload.seed moved by offset.
func dayWorkloadSeed(t testing.TB, offset uint64) workload.Workload {
	t.Helper()
	s := workload.DefaultSpec()
	s.Seed += offset
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
	testtool.Long(t, "two simulated days of 30 minutes (~8 s CPU)")
	src := dayWorkload(t)
	static := runDay(t, 4, &Autoscale{Policy: Static{N: 4}, MinReplicas: 1, InitialReplicas: 4}, rampDay(2), src)
	tt := runDay(t, 4, &Autoscale{Policy: &TargetTracking{UsersPerReplica: 20}, MinReplicas: 1}, rampDay(2), src)
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
	testtool.Long(t, "three simulated days of 30 minutes (~10 s CPU)")
	src := dayWorkload(t)
	prev := math.Inf(1)
	for _, startup := range []time.Duration{0, 2 * time.Minute, 10 * time.Minute} {
		d := runDay(t, 4, &Autoscale{Policy: &TargetTracking{UsersPerReplica: 20}, MinReplicas: 1, Startup: startup}, rampDay(2), src)
		share := d.rows[0].RequestShare
		t.Logf("start-up %v: %.2f %% of requests, %.1f %% of minutes, %.2f GPU-h", startup, 100*share, 100*d.rows[0].MinuteShare, d.gpuHours())
		if share > prev+attainmentNoise {
			t.Errorf("start-up %v: %.2f %% of requests within the SLA, more than %.2f %% with a shorter one", startup, 100*share, 100*prev)
		}
		prev = math.Min(prev, share)
	}
}

// The replicas follow the policy: they start Startup after the decision,
// never exceed the bounds, and a drained replica stops (no scale-down
// window, so that the fall drains while requests are in flight).
func TestAutoscaleLifecycle(t *testing.T) {
	src := dayWorkload(t)
	const startup = 90 * time.Second
	d := runDay(t, 4, &Autoscale{Policy: &TargetTracking{UsersPerReplica: 20, DownStabilization: -1}, MinReplicas: 1, MaxReplicas: 3, Startup: startup}, rampDay(2), src)
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
	// the minutes: every routed request counted once, the start-up seen
	// as replicas starting, the first added replica cold for ColdWindow
	mins := d.st.Scale.Minutes
	if len(mins) != 30 {
		t.Fatalf("%d minutes in a 30-minute day", len(mins))
	}
	routed := 0
	for i, m := range mins {
		routed += m.Routed
		at := float64(i) * 60
		if m.Start != at || m.MaxRouted > m.Routed || m.CachedTokens > m.PromptTokens || m.Replicas > 3 {
			t.Errorf("minute %d: %+v", i, m)
		}
		if at+60 <= firstStart && (m.Starting != 0 || m.Cold != 0) {
			t.Errorf("minute %d before the first start-up at %.0f s: %+v", i, firstStart, m)
		}
		if at <= firstStart+30 && firstStart+30 < at+60 && m.Starting == 0 {
			t.Errorf("minute %d: a replica started at %.0f s, none starting: %+v", i, firstStart, m)
		}
		if at <= firstGrow && firstGrow < at+60 && m.Cold == 0 {
			t.Errorf("minute %d: a replica began serving cold at %.0f s, none cold: %+v", i, firstGrow, m)
		}
		if at >= firstGrow+ColdWindow.Seconds()+60 && at < firstGrow+ColdWindow.Seconds()+120 && m.Cold != 0 && m.Starting == 0 {
			// only a later start-up makes a replica cold this late
			cold := false
			for _, e := range ev {
				cold = cold || (e.At > firstGrow && e.At < at+60 && e.Starting > 0)
			}
			if !cold {
				t.Errorf("minute %d: still %d cold replicas %.0f s after the only start-up", i, m.Cold, at-firstGrow)
			}
		}
	}
	if n := d.st.Scheduled - d.st.Errors; int64(routed) > n || int64(routed) < n-d.st.Cancelled {
		t.Errorf("the minutes routed %d requests, the run sent %d (%d errors, %d cancelled)", routed, d.st.Scheduled, d.st.Errors, d.st.Cancelled)
	}
}

func TestAutoscaleBadBounds(t *testing.T) {
	src := dayWorkload(t)
	for _, a := range []*Autoscale{
		{Policy: Static{N: 2}, MinReplicas: 0},
		{Policy: Static{N: 2}, MinReplicas: 3, MaxReplicas: 2},
		{Policy: Static{N: 2}, MinReplicas: 1, MaxReplicas: 5},
		{Policy: &TargetTracking{}, MinReplicas: 1},
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

// steadyRun is a run of the day workload on four replicas: open-loop at
// rate (sessions/s) when users is 0, else closed-loop users.
func steadyRun(t testing.TB, src workload.Source, rate float64, users int, seed uint64) (*result.Result, *RunStats) {
	t.Helper()
	epoch := time.Unix(0, 0).UTC()
	warm, window := 10*time.Minute, 20*time.Minute
	sum := result.NewSummary(issueSLA(), result.Window{Start: epoch.Add(warm), End: epoch.Add(warm + window)})
	o := Options{Deployment: issueDeployment(t, 4, Fleet{Router: RouterSessionAffinity}), Warmup: warm, Duration: window, ThinkTimeScale: 1, Seed: seed, SeriesInterval: -1}
	if users == 0 {
		o.Arrivals = &workload.Arrivals{Rate: []workload.RatePoint{{PerSecond: rate}}, Seed: seed}
	} else {
		o.Users, o.Ramp, o.Phase, o.PhaseSeed = users, time.Minute, 5*time.Second, seed
	}
	st, err := RunVirtual(context.Background(), o, src, sum)
	if err != nil {
		t.Fatal(err)
	}
	return sum.Result(), st
}

// A flat arrival rate under the static fleet is the steady state of a
// closed-loop run at the same mean concurrency: the same request rate and
// token throughput, and the same latency level. The same concurrency
// means the same by Little's law: an open-loop session is in progress from
// its first turn to its last reply, while a closed-loop user also thinks
// after its last reply before its next session, so n open-loop sessions
// in progress are n × (T + θ) / T closed-loop users (T the mean session
// duration, n / rate; θ the mean think time, 5 s). Noise is what another
// workload seed changes: the closed-loop run is repeated with one, and the
// open-loop run must fall within three times that spread of the first,
// plus 3 % for the rates and the ITL and 15 % for TTFT p50, which open
// loop's Poisson swings in concurrency raise.
func TestPropertyFlatRateMatchesSteadyState(t *testing.T) {
	testtool.Long(t, "three 30-minute runs of four replicas (~8 s CPU)")
	const rate, think = 1.2, 5.0
	open, ost := steadyRun(t, dayWorkload(t), rate, 0, 3)
	active := ost.Sessions.MeanActive
	session := active / rate
	n := int(math.Round(active * (session + think) / session))
	closed, _ := steadyRun(t, dayWorkload(t), 0, n, 3)
	again, _ := steadyRun(t, dayWorkloadSeed(t, 1), 0, n, 3)
	for _, m := range []struct {
		name              string
		open, closed, rep float64
		slack             float64
	}{
		{"requests/s", open.Overall.RequestsPerSecond, closed.Overall.RequestsPerSecond, again.Overall.RequestsPerSecond, 0.03},
		{"output tokens/s", open.Overall.OutputTokensPerSecond, closed.Overall.OutputTokensPerSecond, again.Overall.OutputTokensPerSecond, 0.03},
		{"TTFT p50 ms", open.Overall.TTFT.P50, closed.Overall.TTFT.P50, again.Overall.TTFT.P50, 0.15},
		{"ITL p50 ms", open.Overall.ITL.P50, closed.Overall.ITL.P50, again.Overall.ITL.P50, 0.03},
	} {
		noise := 3*math.Abs(m.rep-m.closed) + m.slack*m.closed
		t.Logf("%s: open loop %.3f (%.1f sessions in progress, T %.0f s), closed loop %d users %.3f (another seed %.3f): allowed ±%.3f", m.name, m.open, active, session, n, m.closed, m.rep, noise)
		if math.Abs(m.open-m.closed) > noise {
			t.Errorf("%s: open loop %.3f, closed loop at the same concurrency %.3f: more than the noise %.3f apart", m.name, m.open, m.closed, noise)
		}
	}
}

// workdayUsers is the documented synthetic day (docs/day.md): 50 users
// overnight, a morning ramp to 1,000 from 07:00 to 10:00, the plateau to
// 16:00, the evening fall to 50 by 20:00.
var workdayUsers = []struct {
	at    time.Duration
	users float64
}{{0, 50}, {7 * time.Hour, 50}, {10 * time.Hour, 1000}, {16 * time.Hour, 1000}, {20 * time.Hour, 50}}

// workdayArrivals converts workdayUsers to a rate with the mean session
// duration session (Little's law, as plan.SimulateDay does).
func workdayArrivals(session time.Duration) *workload.Arrivals {
	a := &workload.Arrivals{Seed: 1}
	for _, p := range workdayUsers {
		a.Rate = append(a.Rate, workload.RatePoint{At: p.at, PerSecond: p.users / session.Seconds()})
	}
	return a
}

// BenchmarkDayReferenceFleet simulates the synthetic workday on the
// reference fleet: up to 8 replicas of gpt-oss-120b on 4× H100 behind
// session affinity, the default workload (mean session 877 s, measured by
// the example's plan), target tracking at 0.8 × 155 users per replica with
// 5-minute start-ups. docs/performance.md records its CPU time.
func BenchmarkDayReferenceFleet(b *testing.B) {
	spec := ReferenceDeploymentSpec()
	spec.GPUs = 8 * 4
	spec.Fleet = Fleet{Router: RouterSessionAffinity}
	d, err := NewDeployment(spec)
	if err != nil {
		b.Fatal(err)
	}
	w, err := workload.OpenForRun(workload.DefaultSpec(), 131072, false)
	if err != nil {
		b.Fatal(err)
	}
	epoch := time.Unix(0, 0).UTC()
	for b.Loop() {
		att := result.NewAttainment(result.DefaultSLA(), result.Window{Start: epoch, End: epoch.Add(24 * time.Hour)}, time.Minute)
		st, err := RunVirtual(context.Background(), Options{Deployment: d, Arrivals: workdayArrivals(877 * time.Second), Duration: 24 * time.Hour,
			ThinkTimeScale: 1, SeriesInterval: -1, Autoscale: &Autoscale{Policy: &TargetTracking{UsersPerReplica: 0.8 * 155}, MinReplicas: 1, Startup: 5 * time.Minute}}, w, att)
		if err != nil {
			b.Fatal(err)
		}
		r := att.Rows()[0]
		b.ReportMetric(100*r.RequestShare, "%requests")
		b.ReportMetric(100*r.MinuteShare, "%minutes")
		b.ReportMetric(st.Scale.GPUSeconds/3600, "GPU-h")
		b.ReportMetric(float64(st.Sessions.Arrived), "sessions")
		// what the day's CPU is spent on (docs/day.md)
		b.ReportMetric(float64(st.Engine.Steps), "steps")
		b.ReportMetric(float64(st.Engine.GenerationTokens), "decode_tokens")
		b.ReportMetric(float64(st.Engine.Evictions), "evictions")
		b.ReportMetric(float64(st.Engine.PromptTokens), "prompt_tokens")
		b.ReportMetric(float64(st.Engine.PrefixHits), "prefix_hit_tokens")
	}
}

// dayProbe runs the reference fleet of BenchmarkDayReferenceFleet (8
// replicas behind session affinity, the default workload) under arr and a,
// and reports the share of requests within the SLA and, for each hour in
// hours, what explains it: the sessions in progress (the mean of every
// minute's count, a session in progress from its first turn's scheduled
// time to its last reply), the requests waiting in the engines and the KV
// cache's usage (means of the per-minute samples), the prompt tokens the prefix caches served, the
// requests scheduled in the hour and the share of them whose TTFT met the
// SLA; and the run's peak of sessions in progress and its router
// imbalance (FleetStats.RequestImbalance).
func dayProbe(b *testing.B, arr *workload.Arrivals, length time.Duration, a *Autoscale, hours []int) {
	spec := ReferenceDeploymentSpec()
	spec.GPUs = 8 * 4
	spec.Fleet = Fleet{Router: RouterSessionAffinity}
	d, err := NewDeployment(spec)
	if err != nil {
		b.Fatal(err)
	}
	w, err := workload.OpenForRun(workload.DefaultSpec(), 131072, false)
	if err != nil {
		b.Fatal(err)
	}
	sla := result.DefaultSLA()
	minutes := int(length.Minutes())
	type minute struct{ requests, ok, good, prompt, cached float64 }
	for b.Loop() {
		epoch := time.Unix(0, 0).UTC()
		att := result.NewAttainment(sla, result.Window{Start: epoch, End: epoch.Add(length)}, time.Minute)
		span := map[[2]int]*[2]float64{}
		mins := make([]minute, minutes)
		sink := result.SinkFunc(func(r *result.Record) error {
			if err := att.Write(r); err != nil {
				return err
			}
			start, done := r.Scheduled.Sub(epoch).Seconds(), r.Done.Sub(epoch).Seconds()
			k := [2]int{r.User, r.Session}
			if sp := span[k]; sp == nil {
				span[k] = &[2]float64{start, done}
			} else {
				sp[1] = max(sp[1], done)
			}
			if m := int(start / 60); m < minutes {
				x := &mins[m]
				x.requests++
				x.prompt += float64(r.PromptTokens)
				x.cached += float64(r.CachedTokens)
				if ttft, ok := r.TTFT(); ok && r.Status == result.StatusOK {
					x.ok++
					if ttft <= sla.TTFT.Max {
						x.good++
					}
				}
			}
			return nil
		})
		st, err := RunVirtual(context.Background(), Options{Deployment: d, Arrivals: arr, Duration: length,
			ThinkTimeScale: 1, SeriesInterval: time.Minute, Autoscale: a}, w, sink)
		if err != nil {
			b.Fatal(err)
		}
		active := make([]float64, minutes)
		for _, sp := range span {
			for m := int(sp[0] / 60); m < minutes && float64(m)*60 < sp[1]; m++ {
				active[m]++
			}
		}
		b.ReportMetric(100*att.Rows()[0].RequestShare, "%requests")
		b.ReportMetric(float64(st.Sessions.PeakActive), "peak_sessions")
		b.ReportMetric(st.Fleet.RequestImbalance, "request_imbalance")
		for _, h := range hours {
			var sum minute
			var act, waiting, kv float64
			for m := h * 60; m < (h+1)*60 && m < minutes; m++ {
				x := mins[m]
				sum.requests, sum.ok, sum.good, sum.prompt, sum.cached = sum.requests+x.requests, sum.ok+x.ok, sum.good+x.good, sum.prompt+x.prompt, sum.cached+x.cached
				act += active[m] / 60
				if m < len(st.Series.Samples) {
					waiting += float64(st.Series.Samples[m].Waiting) / 60
					kv += st.Series.Samples[m].KVUsage / 60
				}
			}
			b.ReportMetric(act, fmt.Sprintf("sessions_h%02d", h))
			b.ReportMetric(waiting, fmt.Sprintf("waiting_h%02d", h))
			b.ReportMetric(kv, fmt.Sprintf("kv_usage_h%02d", h))
			b.ReportMetric(sum.cached/sum.prompt, fmt.Sprintf("hits_h%02d", h))
			b.ReportMetric(sum.requests, fmt.Sprintf("requests_h%02d", h))
			b.ReportMetric(sum.good/sum.ok, fmt.Sprintf("TTFT_ok_h%02d", h))
		}
	}
}

// BenchmarkDayReferencePlateau is the busiest hour of the workday on the
// reference fleet (8 replicas, target tracking as BenchmarkDayReferenceFleet,
// sessions arriving at the peak's rate from empty): about 17–21 s of CPU
// (docs/performance.md).
func BenchmarkDayReferencePlateau(b *testing.B) {
	spec := ReferenceDeploymentSpec()
	spec.GPUs = 8 * 4
	spec.Fleet = Fleet{Router: RouterSessionAffinity}
	d, err := NewDeployment(spec)
	if err != nil {
		b.Fatal(err)
	}
	w, err := workload.OpenForRun(workload.DefaultSpec(), 131072, false)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sum, st := runDigest(b, Options{Deployment: d, Arrivals: &workload.Arrivals{Seed: 1, Rate: []workload.RatePoint{{PerSecond: 1000.0 / 877}}}, Duration: time.Hour,
			ThinkTimeScale: 1, SeriesInterval: -1, Autoscale: &Autoscale{Policy: &TargetTracking{UsersPerReplica: 0.8 * 155}, MinReplicas: 1, Startup: 5 * time.Minute}}, w)
		b.Logf("records digest %s", sum[:16])
		b.ReportMetric(float64(st.Engine.Evictions), "evictions")
		b.ReportMetric(float64(st.Scheduled), "requests")
	}
}

// BenchmarkDayReferenceStatic is the workday on the 8 replicas all day
// (docs/day.md, "Why the reference day attains 75 %"): the hours before,
// on and after the plateau.
func BenchmarkDayReferenceStatic(b *testing.B) {
	dayProbe(b, workdayArrivals(877*time.Second), 24*time.Hour, &Autoscale{Policy: Static{N: 8}, MinReplicas: 1, InitialReplicas: 8, Startup: 5 * time.Minute},
		[]int{9, 10, 11, 12, 15, 16, 19, 23})
}

// BenchmarkDayReferencePeak is the plateau alone: sessions arriving at the
// peak's rate (1,000 users / 877 s) for three hours onto the 8 replicas,
// from empty.
func BenchmarkDayReferencePeak(b *testing.B) {
	dayProbe(b, &workload.Arrivals{Seed: 1, Rate: []workload.RatePoint{{PerSecond: 1000.0 / 877}}}, 3*time.Hour,
		&Autoscale{Policy: Static{N: 8}, MinReplicas: 1, InitialReplicas: 8}, []int{0, 1, 2})
}

// Sessions in progress that hover around a multiple of the target do not
// drain a replica and start it again at every sync: target tracking falls
// only to the highest answer of its stabilisation window, as the HPA does.
// Without the window (negative) it follows every swing — the flapping that
// made a longer start-up attain more than instant replicas on the example
// day (10 drains and 10 cold restarts at 0 s start-up, 4 drains at 5 min).
func TestTargetTrackingDoesNotFlap(t *testing.T) {
	swing := []int{91, 89, 91, 88, 92, 89, 90, 87}
	for _, tc := range []struct {
		window     time.Duration
		wantDrains int
	}{{0, 0}, {-1, 3}} {
		p := &TargetTracking{UsersPerReplica: 30, DownStabilization: tc.window}
		current, drains := 4, 0
		for i, n := range swing {
			want := p.Desired(ScaleSignal{Now: float64(15 * i), Serving: current, Sessions: n})
			if want < current {
				drains++
			}
			current = want
		}
		if drains != tc.wantDrains {
			t.Errorf("window %v: %d drains over a swing around 90 sessions at 30 per replica, want %d", tc.window, drains, tc.wantDrains)
		}
	}
	// the window ends: a load that stays low drains after 300 s
	p := &TargetTracking{UsersPerReplica: 30}
	p.Desired(ScaleSignal{Now: 0, Serving: 4, Sessions: 100})
	if got := p.Desired(ScaleSignal{Now: 299, Serving: 4, Sessions: 50}); got != 4 {
		t.Errorf("within the window: %d replicas, want 4", got)
	}
	if got := p.Desired(ScaleSignal{Now: 301, Serving: 4, Sessions: 50}); got != 2 {
		t.Errorf("after the window: %d replicas, want 2", got)
	}
}
