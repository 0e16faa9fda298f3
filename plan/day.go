package plan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/words"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// Day is load over time (the day section): sessions arriving by a rate
// per time of day, or concurrent users per time of day converted to a rate,
// served by the chosen configuration's replicas under each autoscaling
// policy (docs/day.md).
type Day struct {
	// Rate is the session arrival rate over the day (sessions per second),
	// or Users the concurrent users, converted by Little's law with the
	// mean session duration T measured on the simulated fleet: λ(t) =
	// U(t) / T. Exactly one is set; both are piecewise-linear.
	Rate  []workload.RatePoint
	Users []UsersPoint
	// Length is the day's length on the curve's clock; Compression divides
	// the arrivals' clock (workload.Arrivals), never think times or
	// service: the simulated day lasts Length / Compression.
	Length      time.Duration
	Compression float64
	// Startup is a replica's start-up time; SyncPeriod the policies'.
	Startup    time.Duration
	SyncPeriod time.Duration
	// MinReplicas and MaxReplicas bound the policies; MaxReplicas 0 means
	// the static fleet.
	MinReplicas, MaxReplicas int
	Policies                 []DayPolicy
	// StartupSensitivity lists start-up times the day's first
	// target-tracking policy is simulated again with (DaySummary.
	// Sensitivity); empty: none.
	StartupSensitivity []time.Duration
}

// UsersPoint is one point of Day.Users.
type UsersPoint struct {
	At    time.Duration
	Users float64
}

// Day policy kinds.
const (
	DayStatic         = "static"
	DayTargetTracking = "target-tracking"
	DayHPA            = "hpa"
)

// DayPolicies lists the policy kinds.
var DayPolicies = []string{DayStatic, DayTargetTracking, DayHPA}

// DayPolicy is one autoscaling policy the day is simulated under.
type DayPolicy struct {
	// Kind is static (the peak fleet all day), target-tracking (sessions
	// per replica at Headroom × the measured ceiling per replica) or hpa
	// (the Kubernetes HPA on Metric at Target per replica).
	Kind     string
	Headroom float64
	Metric   string
	Target   float64
	// Tolerance is the HPA's (0: Kubernetes' 0.1); DownStabilization the
	// HPA's and target tracking's scale-down window (0: 300 s).
	Tolerance         float64
	DownStabilization time.Duration
}

// Name is the policy as the summary labels it.
func (p DayPolicy) Name() string {
	switch p.Kind {
	case DayTargetTracking:
		return fmt.Sprintf("target-tracking %.0f%%", 100*p.Headroom)
	case DayHPA:
		return fmt.Sprintf("hpa %s %g", p.Metric, p.Target)
	}
	return p.Kind
}

// DaySummary is the simulated day: one row per policy.
type DaySummary struct {
	// LengthSeconds is the simulated day's length (Length / Compression).
	LengthSeconds float64 `json:"length_s"`
	// MeanSessionSeconds is the measured mean session duration T that
	// converts users to a rate (λ = U / T) and sizes the static fleet;
	// CalibrationRate the flat arrival rate (sessions/s) it was measured
	// at.
	MeanSessionSeconds float64 `json:"mean_session_s"`
	CalibrationRate    float64 `json:"calibration_rate_per_s"`
	// PeakUsers is the day's most concurrent users (U, or λ × T);
	// CeilingPerReplica the plan's ceiling per replica; StaticReplicas the
	// peak fleet: ceil(PeakUsers / (headroom × CeilingPerReplica)).
	PeakUsers         float64 `json:"peak_users"`
	CeilingPerReplica float64 `json:"ceiling_per_replica"`
	Headroom          float64 `json:"headroom"`
	StaticReplicas    int     `json:"static_replicas"`
	GPUsPerReplica    int     `json:"gpus_per_replica"`
	StartupSeconds    float64 `json:"startup_s"`
	// Users are the users the curve asks for at each minute's start of
	// the simulated day (rate × T).
	Users []float64 `json:"users_per_minute"`
	Rows  []DayRow  `json:"rows"`
	// Sensitivity is target tracking's attainment against the start-up
	// time (Day.StartupSensitivity; nil: not asked for).
	Sensitivity *StartupSensitivity `json:"startup_sensitivity,omitempty"`
	Provenance  Provenance          `json:"provenance"`
}

// RampMissShare is how far below the shortest start-up's share of requests
// within the SLA a longer start-up's must fall for target tracking to miss
// the morning ramp: two points, twice the noise between runs that should
// tie (docs/day.md, "Start-up time").
const RampMissShare = 0.02

// sensitivityStartups are d's start-up sensitivity times, shortest first,
// each once: the days SimulateDay simulates for it (the day's own start-up
// among them is not simulated again).
func (d Day) sensitivityStartups() []time.Duration {
	return slices.Compact(slices.Sorted(slices.Values(d.StartupSensitivity)))
}

// StartupSensitivity is one target-tracking policy's day simulated with
// each of several start-up times, shortest first.
type StartupSensitivity struct {
	Policy string             `json:"policy"`
	Points []SensitivityPoint `json:"points"`
	// MissesRampFromSeconds is the shortest start-up whose share of
	// requests within the SLA falls more than MissShare below the
	// shortest start-up's: from it on, the replicas the morning ramp asks
	// for arrive too late. Negative: none of the start-ups does.
	MissesRampFromSeconds float64 `json:"misses_ramp_from_s"`
	MissShare             float64 `json:"miss_share"`
}

// SensitivityPoint is the day at one start-up time.
type SensitivityPoint struct {
	StartupSeconds float64 `json:"startup_s"`
	// RequestShare and MinuteShare are the overall attainment
	// (result.AttainmentRow).
	RequestShare float64 `json:"request_share"`
	MinuteShare  float64 `json:"minute_share"`
	GPUHours     float64 `json:"gpu_hours"`
	VsStatic     float64 `json:"vs_static"`
}

// MissesRamp reports the start-up above which target tracking misses the
// morning ramp: the longest start-up before MissesRampFromSeconds (ok
// false when no start-up misses it).
func (s *StartupSensitivity) MissesRamp() (within, from float64, ok bool) {
	if s.MissesRampFromSeconds < 0 {
		return 0, 0, false
	}
	for _, p := range s.Points {
		if p.StartupSeconds < s.MissesRampFromSeconds {
			within = p.StartupSeconds
		}
	}
	return within, s.MissesRampFromSeconds, true
}

// DayRow is the day under one policy.
type DayRow struct {
	Policy string `json:"policy"`
	// Attainment is the overall row first, then one per profile.
	Attainment []result.AttainmentRow `json:"attainment"`
	// GPUHours are the GPUs held over the day (start-up and draining
	// included); VsStatic their ratio to the static fleet's.
	GPUHours float64 `json:"gpu_hours"`
	VsStatic float64 `json:"vs_static"`
	// Cost is GPUHours × plan.gpu_price_per_hour (0: no price).
	Cost         float64 `json:"cost,omitempty"`
	PeakReplicas int     `json:"peak_replicas"`
	// Replicas are the fleet's changes; Minutes the overall p95 TTFT and
	// ITL per minute against the SLA; Sessions the sessions that arrived.
	Replicas []sim.ScaleEvent       `json:"replicas"`
	Minutes  []result.AttainmentBin `json:"minutes"`
	Sessions *workload.SessionStats `json:"sessions,omitempty"`
	// Worst are the worst minutes outside the SLA (at most WorstMinutes)
	// and their causes.
	Worst []WorstMinute `json:"worst_minutes,omitempty"`
}

// Validate reports the first problem with d.
func (d *Day) Validate() error {
	switch {
	case len(d.Rate) > 0 && len(d.Users) > 0:
		return errors.New("day: a rate or a users curve, not both")
	case len(d.Rate) == 0 && len(d.Users) == 0:
		return errors.New("day: needs a rate or a users curve")
	case d.Length <= 0:
		return errors.New("day: length must be positive")
	case len(d.Policies) == 0:
		return errors.New("day: no policy")
	}
	return nil
}

// calibrationLength is the flat-rate run that measures the mean session
// duration: a warm-up and a window long against sessions of minutes.
const (
	calibrationWarmup = 30 * time.Minute
	calibrationWindow = 2 * time.Hour
)

// SimulateDay simulates d on s's deployment with the chosen configuration
// params: the mean session duration is measured first (an open-loop run at
// a flat rate that keeps about half a replica's ceiling in progress per
// replica), then the day under each policy. ceilingPerReplica is the
// plan's capacity over its deployment's replicas; headroom the plan's.
func SimulateDay(ctx context.Context, s capacity.Setup, params map[string]any, d Day, ceilingPerReplica, headroom float64, pricePerGPUHour float64, logger *slog.Logger) (*DaySummary, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if s.Deployment.SimErr != nil {
		return nil, fmt.Errorf("day: the deployment has no simulator: %w", s.Deployment.SimErr)
	}
	if !(ceilingPerReplica > 0) {
		return nil, fmt.Errorf("day: no ceiling per replica to size the fleet (%v)", ceilingPerReplica)
	}
	if !(headroom > 0) {
		headroom = 1
	}
	base := s.Deployment.Sim
	tp := max(base.TensorParallelSize, 1)
	c := d.Compression
	if c == 0 {
		c = 1
	}
	out := &DaySummary{LengthSeconds: d.Length.Seconds() / c, CeilingPerReplica: ceilingPerReplica, Headroom: headroom, GPUsPerReplica: tp, StartupSeconds: d.Startup.Seconds()}

	// the mean session duration, by Little's law on a flat-rate run
	guessR, err := base.Replicas()
	if err != nil {
		return nil, err
	}
	// a first guess of T from the workload: 10 minutes
	lambda0 := ceilingPerReplica * float64(guessR) / 2 / 600
	cal := &workload.Arrivals{Rate: []workload.RatePoint{{PerSecond: lambda0}}}
	ev, err := dayRun(ctx, s, base, guessR, params, capacity.Load{Warmup: calibrationWarmup, Duration: calibrationWindow, ThinkTimeScale: s.Windows.Sweep.ThinkTimeScale, Arrivals: cal}, nil, logger)
	if err != nil {
		return nil, fmt.Errorf("day: measure the mean session duration: %w", err)
	}
	if ev.Sessions == nil || ev.Sessions.MeanActive <= 0 {
		return nil, errors.New("day: the calibration run had no session in progress")
	}
	out.CalibrationRate = lambda0
	out.MeanSessionSeconds = ev.Sessions.MeanActive / lambda0

	rate := d.Rate
	if len(d.Users) > 0 {
		rate = nil
		for _, p := range d.Users {
			rate = append(rate, workload.RatePoint{At: p.At, PerSecond: p.Users / out.MeanSessionSeconds})
		}
	}
	for _, p := range rate {
		out.PeakUsers = math.Max(out.PeakUsers, p.PerSecond*out.MeanSessionSeconds)
	}
	// a compressed clock multiplies the rate, and so the users in progress
	out.PeakUsers *= c
	out.StaticReplicas = max(int(math.Ceil(out.PeakUsers/(headroom*ceilingPerReplica))), 1)
	maxR := d.MaxReplicas
	if maxR == 0 {
		maxR = out.StaticReplicas
	}
	if d.MinReplicas > maxR {
		return nil, fmt.Errorf("day: min_replicas %d exceeds max_replicas %d", d.MinReplicas, maxR)
	}
	arr := &workload.Arrivals{Rate: rate, Compression: d.Compression}
	epoch := time.Unix(0, 0).UTC()
	length := time.Duration(float64(d.Length) / c)
	for m := 0; float64(m)*60 < length.Seconds(); m++ {
		out.Users = append(out.Users, arr.RateAt(float64(m)*60)*out.MeanSessionSeconds)
	}
	simulate := func(pol DayPolicy, startup time.Duration) (DayRow, error) {
		a := &sim.Autoscale{MinReplicas: max(d.MinReplicas, 1), MaxReplicas: maxR, Startup: startup, SyncPeriod: d.SyncPeriod}
		switch pol.Kind {
		case DayStatic:
			a.Policy, a.InitialReplicas, a.MaxReplicas = sim.Static{N: out.StaticReplicas}, out.StaticReplicas, max(maxR, out.StaticReplicas)
			a.MinReplicas = min(a.MinReplicas, out.StaticReplicas)
		case DayTargetTracking:
			a.Policy = &sim.TargetTracking{UsersPerReplica: pol.Headroom * ceilingPerReplica, DownStabilization: pol.DownStabilization}
		case DayHPA:
			a.Policy = &sim.HPA{Metric: pol.Metric, Target: pol.Target, Tolerance: pol.Tolerance, DownStabilization: pol.DownStabilization}
		default:
			return DayRow{}, fmt.Errorf("day: unknown policy %q", pol.Kind)
		}
		att := result.NewAttainment(s.SLA, result.Window{Start: epoch, End: epoch.Add(length)}, time.Minute)
		ev, err := dayRun(ctx, s, base, a.MaxReplicas, params, capacity.Load{Duration: length, ThinkTimeScale: s.Windows.Sweep.ThinkTimeScale, Arrivals: arr, Autoscale: a}, att, logger)
		if err != nil {
			return DayRow{}, fmt.Errorf("day: %s: %w", pol.Name(), err)
		}
		out.Provenance = ev.Provenance
		row := DayRow{Policy: pol.Name(), Attainment: att.Rows(), Minutes: att.Series(), Sessions: ev.Sessions}
		if st := ev.Scale; st != nil {
			row.GPUHours, row.PeakReplicas, row.Replicas = st.GPUSeconds/3600, st.PeakReplicas, st.Events
			row.Worst = worstMinutes(s.SLA, row.Minutes, st)
		}
		row.Cost = row.GPUHours * pricePerGPUHour
		return row, nil
	}
	var staticGPUh float64
	for _, pol := range d.Policies {
		row, err := simulate(pol, d.Startup)
		if err != nil {
			return nil, err
		}
		if pol.Kind == DayStatic && staticGPUh == 0 {
			staticGPUh = row.GPUHours
		}
		out.Rows = append(out.Rows, row)
	}
	if staticGPUh == 0 {
		staticGPUh = float64(out.StaticReplicas*tp) * length.Hours()
	}
	for i := range out.Rows {
		out.Rows[i].VsStatic = out.Rows[i].GPUHours / staticGPUh
	}
	if len(d.StartupSensitivity) > 0 {
		i := slices.IndexFunc(d.Policies, func(p DayPolicy) bool { return p.Kind == DayTargetTracking })
		if i < 0 {
			return nil, errors.New("day: startup_sensitivity needs a target-tracking policy")
		}
		sens := &StartupSensitivity{Policy: d.Policies[i].Name(), MissesRampFromSeconds: -1, MissShare: RampMissShare}
		for _, startup := range d.sensitivityStartups() {
			row := out.Rows[i] // the day's own start-up is simulated already
			if startup != d.Startup {
				var err error
				if row, err = simulate(d.Policies[i], startup); err != nil {
					return nil, err
				}
			}
			a := row.Attainment[0]
			p := SensitivityPoint{StartupSeconds: startup.Seconds(), RequestShare: a.RequestShare, MinuteShare: a.MinuteShare, GPUHours: row.GPUHours, VsStatic: row.GPUHours / staticGPUh}
			if len(sens.Points) > 0 && sens.MissesRampFromSeconds < 0 && p.RequestShare < sens.Points[0].RequestShare-RampMissShare {
				sens.MissesRampFromSeconds = p.StartupSeconds
			}
			sens.Points = append(sens.Points, p)
		}
		out.Sensitivity = sens
	}
	return out, nil
}

// dayRun evaluates load on r replicas of base, sending records to sink.
func dayRun(ctx context.Context, s capacity.Setup, base sim.Deployment, r int, params map[string]any, load capacity.Load, sink result.Sink, logger *slog.Logger) (*capacity.Evaluation, error) {
	dep := base
	dep.GPUs = r * max(base.TensorParallelSize, 1)
	l, err := engine.NewSim(dep, engine.SimOptions{Logger: logger})
	if err != nil {
		return nil, err
	}
	fs := s
	fs.Launcher, fs.Virtual = l, true
	fs.Deployment.Kind, fs.Deployment.GPUs, fs.Deployment.Sim = "sim", dep.GPUs, dep
	ev, err := capacity.NewEvaluator(fs, logger)
	if err != nil {
		return nil, err
	}
	return ev.Evaluate(ctx, params, load, capacity.Outputs{Sink: sink})
}

// simulateDay adds the day to the summary: the chosen configuration, its
// ceiling per replica, plan.headroom and the GPU's price. Its detail is
// each policy's attainment; the summary's day lines (Lines) say the rest.
// The plan runs it only when a day is configured.
func (p *planner) simulateDay(ctx context.Context) (string, error) {
	d := p.s.Day
	dep := p.s.Deployment
	replicas, err := sim.ReplicasOf(max(dep.GPUs, 1), max(dep.TensorParallelSize, 1))
	if err != nil {
		return "", err
	}
	ceiling := float64(p.sum.Capacity.Users) / float64(replicas)
	headroom := p.s.Demand.Headroom
	days := words.Count(len(d.Policies), "policy", "policies")
	if n := len(slices.DeleteFunc(d.sensitivityStartups(), func(s time.Duration) bool { return s == d.Startup })); n > 0 {
		days += fmt.Sprintf(" and target tracking at %s", words.Count(n, "more start-up time", "more start-up times"))
	}
	p.logf("   measuring the mean session duration, then %s over a %.1f h day each (simulated)", days, d.Length.Hours())
	ds, err := SimulateDay(ctx, p.s.Setup, p.sum.Capacity.Config, *d, ceiling, headroom, p.s.Demand.PricePerGPUHour[dep.GPU], p.o.Logger)
	if err != nil {
		return "", err
	}
	p.sum.Day = ds
	parts := make([]string, len(ds.Rows))
	for i, r := range ds.Rows {
		parts[i] = fmt.Sprintf("%s %.1f %%", r.Policy, 100*r.Attainment[0].RequestShare)
	}
	return fmt.Sprintf("%.1f h simulated; requests within the SLA: %s", ds.LengthSeconds/3600, strings.Join(parts, ", ")), nil
}

// Lines are the day's headline: one line per policy.
func (s *DaySummary) Lines() []string {
	out := []string{fmt.Sprintf("day: %.1f h simulated, peak %.0f users (mean session %.0f s), static fleet %s of %s, start-up %.0f s",
		s.LengthSeconds/3600, s.PeakUsers, s.MeanSessionSeconds, words.Plural(s.StaticReplicas, "replica"), words.Plural(s.GPUsPerReplica, "GPU"), s.StartupSeconds)}
	for _, r := range s.Rows {
		a := r.Attainment[0]
		line := fmt.Sprintf("day %-26s %5.1f %% of requests, %5.1f %% of minutes within the SLA; %6.1f GPU-hours (%.2f× static), peak %d replicas",
			r.Policy+":", 100*a.RequestShare, 100*a.MinuteShare, r.GPUHours, r.VsStatic, r.PeakReplicas)
		if r.Cost > 0 {
			line += fmt.Sprintf(", $%.0f", r.Cost)
		}
		out = append(out, line)
		if len(r.Worst) > 0 {
			out = append(out, fmt.Sprintf("    worst minute: %s", r.Worst[0]))
		}
	}
	if sens := s.Sensitivity; sens != nil {
		var pts []string
		for _, p := range sens.Points {
			pts = append(pts, fmt.Sprintf("%.0f s %.1f %%", p.StartupSeconds, 100*p.RequestShare))
		}
		line := fmt.Sprintf("day start-up sensitivity, %s, requests within the SLA: %s; ", sens.Policy, strings.Join(pts, ", "))
		if within, from, ok := sens.MissesRamp(); ok {
			line += fmt.Sprintf("misses the morning ramp above %.0f s (at %.0f s more than %.0f points below %.0f s)", within, from, 100*sens.MissShare, sens.Points[0].StartupSeconds)
		} else {
			line += fmt.Sprintf("no start-up falls more than %.0f points below %.0f s", 100*sens.MissShare, sens.Points[0].StartupSeconds)
		}
		out = append(out, line)
	}
	return out
}
