package plan_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/plan"
)

// dayConfig is gpt-oss-20b on four H100s (one replica each) behind
// session affinity, serving short coding sessions: a day of them
// simulates in seconds.
const dayConfig = `engine:
  model: gpt-oss-20b
  gpu: H100-SXM
  gpus: 4
  tensor_parallel_size: 1
fleet: {router: session-affinity}
workload:
  profiles:
    - name: coder
      weight: 1
      context_start: {kind: lognormal, median: 2000, sigma: 0.3, min: 500, max: 6000}
      max_context: 12000
      growth: {kind: lognormal, median: 600, sigma: 0.4, min: 100, max: 3000}
      output_tokens: {kind: lognormal, median: 200, sigma: 0.5, min: 16, max: 1024}
      think_time_s: {kind: exponential, mean: 5}
      at_max: new-session
sla:
  ttft: {percentile: 95, max: 1500ms}
  itl: {percentile: 95, max: 60ms}
`

func daySetup(t *testing.T) plan.Setup {
	t.Helper()
	cfg, err := config.Load(strings.NewReader(dayConfig), "day.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A users curve becomes a rate by Little's law with the measured mean
// session duration: a flat 60 users keeps about 60 sessions in progress.
// Under a ramp the policies differ as they should: the static fleet holds
// its replicas all day, target tracking fewer GPU-hours.
func TestSimulateDay(t *testing.T) {
	testtool.Long(t, "a calibration run and four 30-minute days: about 15 s CPU")
	s := daySetup(t)
	flat := plan.Day{Length: 30 * time.Minute, Users: []plan.UsersPoint{{At: 0, Users: 60}}, Policies: []plan.DayPolicy{{Kind: plan.DayStatic}}}
	ds, err := plan.SimulateDay(context.Background(), s.Setup, nil, flat, 20, 0.8, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	row := ds.Rows[0]
	t.Logf("flat 60 users: mean session %.0f s, %d static replicas, %+v, sessions %+v", ds.MeanSessionSeconds, ds.StaticReplicas, row.Attainment[0], row.Sessions)
	if ds.MeanSessionSeconds <= 0 || ds.StaticReplicas != 4 { // ceil(60 / (0.8 × 20))
		t.Fatalf("mean session %v s, static fleet %d: want a measured duration and 4 replicas", ds.MeanSessionSeconds, ds.StaticReplicas)
	}
	// the window starts empty: judge the second half's level by the mean
	// over the whole window, which a ramp-up from 0 lowers by T/length
	want := 60 * (1 - ds.MeanSessionSeconds/2/ds.LengthSeconds)
	if got := row.Sessions.MeanActive; math.Abs(got-want) > 0.15*want {
		t.Errorf("flat 60 users kept %.1f sessions in progress, want about %.1f (Little's law, the ramp-up from empty discounted)", got, want)
	}
	if row.GPUHours != 4*0.5 || row.VsStatic != 1 || row.Cost != 3*row.GPUHours {
		t.Errorf("static: %.3f GPU-hours (%.2f× static), $%.2f: want 4 GPUs × 30 min at $3", row.GPUHours, row.VsStatic, row.Cost)
	}

	ramp := plan.Day{Length: 30 * time.Minute, Startup: time.Minute, Users: []plan.UsersPoint{
		{At: 0, Users: 10}, {At: 5 * time.Minute, Users: 10}, {At: 10 * time.Minute, Users: 60}, {At: 20 * time.Minute, Users: 60}, {At: 25 * time.Minute, Users: 10}},
		Policies: []plan.DayPolicy{{Kind: plan.DayStatic}, {Kind: plan.DayTargetTracking, Headroom: 0.8}, {Kind: plan.DayHPA, Metric: "num_requests_waiting", Target: 2}}}
	ds, err = plan.SimulateDay(context.Background(), s.Setup, nil, ramp, 20, 0.8, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range ds.Lines() {
		t.Log(line)
	}
	if len(ds.Rows) != 3 || ds.Rows[0].Policy != "static" || ds.Rows[1].Policy != "target-tracking 80%" {
		t.Fatalf("rows %+v", ds.Rows)
	}
	static, tt := ds.Rows[0], ds.Rows[1]
	if !(tt.GPUHours < static.GPUHours) || tt.PeakReplicas < 2 {
		t.Errorf("target tracking held %.2f GPU-hours at up to %d replicas, static %.2f", tt.GPUHours, tt.PeakReplicas, static.GPUHours)
	}
	if len(static.Minutes) != 30 || len(tt.Replicas) < 3 {
		t.Errorf("static has %d minutes, target tracking %d fleet changes", len(static.Minutes), len(tt.Replicas))
	}
}

// The example day's sensitivity to start-up time: target tracking at 0.8
// of the quick plan's 155 users per replica, start-ups from 0 to 10
// minutes (docs/day.md records the table). A longer start-up never
// improves attainment: no start-up attains more of the requests than any
// shorter one beyond half a point, nor more minutes beyond two of the
// day's 120 (runs that should tie route requests in another order: 0 s
// and 1 min differed by 0.5 points of requests, 2026-12-02). Before target
// tracking had its scale-down window, 5 minutes attained 1.1 points of
// requests more than instant replicas, whose flapping replicas restarted
// cold (docs/day.md, "Start-up time"): this test failed on it. The
// start-up above which target tracking misses the morning ramp is the
// first whose requests fall more than two points below instant replicas'.
func TestExampleDayStartupSensitivity(t *testing.T) {
	testtool.Long(t, "six simulated 2-hour days of up to 400 users on the reference deployment: about 2 min CPU")
	cfg, err := config.LoadFile("../examples/day.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := *s.Day
	base.Policies = []plan.DayPolicy{{Kind: plan.DayTargetTracking, Headroom: 0.8}}
	const requestNoise, minuteNoise, missed = 0.005, 2.0 / 120, 0.02
	instant, misses := 0.0, time.Duration(-1)
	bestRequests, bestMinutes := 0.0, 0.0 // the best of the shorter start-ups
	for i, startup := range []time.Duration{0, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute} {
		d := base
		d.Startup = startup
		ds, err := plan.SimulateDay(context.Background(), s.Setup, cfg.Engine.Params, d, 155, 0.8, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := ds.Rows[0]
		share, minutes := r.Attainment[0].RequestShare, r.Attainment[0].MinuteShare
		t.Logf("| %v | %.1f %% | %.1f %% | %.1f | %.2f× |", startup, 100*share, 100*minutes, r.GPUHours, r.VsStatic)
		if i > 0 {
			if share > bestRequests+requestNoise {
				t.Errorf("start-up %v: %.2f %% of requests within the SLA, more than a shorter start-up's %.2f %% beyond the noise", startup, 100*share, 100*bestRequests)
			}
			if minutes > bestMinutes+minuteNoise+1e-9 {
				t.Errorf("start-up %v: %.1f %% of minutes within the SLA, more than a shorter start-up's %.1f %% beyond two minutes", startup, 100*minutes, 100*bestMinutes)
			}
		}
		bestRequests, bestMinutes = max(bestRequests, share), max(bestMinutes, minutes)
		switch {
		case startup == 0:
			instant = share
		case share < instant-missed && misses < 0:
			misses = startup
		}
	}
	if misses < 0 {
		t.Errorf("no start-up up to 10 minutes made target tracking miss the ramp")
	}
	t.Logf("target tracking misses the morning ramp from a start-up of %v", misses)
}
