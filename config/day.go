package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// Day is load over time for spoc plan (the day section): a session arrival
// rate or concurrent users per time of day, simulated on the chosen
// configuration's replicas under autoscaling policies (docs/day.md).
type Day struct {
	Length      Duration     `yaml:"length" doc:"The day's length on the curve's clock (24h for a day)."`
	Compression float64      `yaml:"compression,omitempty" doc:"Divides the clock of the arrivals and the curve (a 24h curve compressed by 24 is simulated in an hour at 24× the rate), never think times or service. 0 or 1: as written."`
	Rate        []RatePoint  `yaml:"rate,omitempty" doc:"Session arrival rate per time of day, piecewise linear (first point at 0s, times increasing); sessions start by a Poisson process of this rate."`
	Users       []UsersPoint `yaml:"users,omitempty" doc:"Concurrent users per time of day, piecewise linear, converted to an arrival rate by Little's law with the mean session duration T that spoc measures on the simulated fleet first: rate(t) = users(t) / T."`
	Trace       string       `yaml:"trace,omitempty" doc:"A CSV file of the day's load instead of rate or users: a header with timestamp_s (seconds since the day's start, first 0, increasing) and sessions_per_minute or users, one point per line, piecewise linear like rate and users."`
	Startup     Duration     `yaml:"startup,omitempty" doc:"A replica's start-up time, from the policy's decision to serving (0s: plan.engine_startup when set, else instant)."`
	SyncPeriod  Duration     `yaml:"sync_period,omitempty" doc:"How often the policies decide (0s: the Kubernetes HPA's 15s)."`
	MinReplicas int          `yaml:"min_replicas,omitempty" doc:"Fewest replicas a policy keeps (0: 1)."`
	MaxReplicas int          `yaml:"max_replicas,omitempty" doc:"Most replicas a policy may run (0: the static peak fleet)."`
	Policies    []DayPolicy  `yaml:"policies" doc:"Autoscaling policies the day is simulated under, one summary row each."`
	// StartupSensitivity: the report's sensitivity to start-up time.
	StartupSensitivity []Duration `yaml:"startup_sensitivity,omitempty" doc:"Start-up times (at least two, e.g. [0s, 2m, 5m, 10m]) the first target-tracking policy's day is simulated again with: its attainment against the start-up time, and the start-up above which it misses the morning ramp (its requests within the SLA more than 2 points below the shortest start-up's). Each is one more simulated day."`
}

// UsersPoint is one point of day.users.
type UsersPoint struct {
	At    Duration `yaml:"at" doc:"Time of day since the day's start."`
	Users float64  `yaml:"users" doc:"Concurrent users at that time."`
}

// DayPolicy is one entry of day.policies.
type DayPolicy struct {
	Kind              string   `yaml:"kind" doc:"static (the peak fleet all day: ceil(peak users / (plan.headroom × ceiling per replica))), target-tracking (sessions per replica held at headroom × the measured ceiling per replica) or hpa (the Kubernetes HPA on a vLLM metric)."`
	Headroom          float64  `yaml:"headroom,omitempty" doc:"target-tracking: fraction of the ceiling per replica to hold, in (0, 1]."`
	Metric            string   `yaml:"metric,omitempty" doc:"hpa: num_requests_waiting (per replica) or kv_cache_usage (0-1)."`
	Target            float64  `yaml:"target,omitempty" doc:"hpa: the metric's per-replica average to aim at."`
	Tolerance         float64  `yaml:"tolerance,omitempty" doc:"hpa: no change while the metric is within this fraction of the target (0: Kubernetes' 0.1)."`
	DownStabilization Duration `yaml:"down_stabilization,omitempty" doc:"hpa and target-tracking: scale down only to the highest recommendation of this window (0: 5m, the Kubernetes HPA's default and a target-tracking policy's usual scale-in cooldown), so a load hovering around a replica boundary does not drain and restart a replica at every sync."`
}

func validateCurve(p string, n int, at func(int) Duration, value func(int) float64, unit string, errs *Errors) {
	for i := range n {
		ip := fmt.Sprintf("%s[%d]", p, i)
		switch t := at(i); {
		case t < 0:
			errs.Addf(ip+".at", "must not be negative, got %s", t)
		case i == 0 && t != 0:
			errs.Addf(ip+".at", "the curve starts at 0s, got %s", t)
		case i > 0 && t <= at(i-1):
			errs.Addf(ip+".at", "must be after %s[%d].at (%s), got %s: times must increase", p[len(p)-lastDot(p):], i-1, at(i-1), t)
		}
		if v := value(i); !(v >= 0) || math.IsInf(v, 0) {
			errs.Addf(ip+"."+unit, "must be a non-negative number, got %v", v)
		}
	}
}

func lastDot(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '.' {
			return len(p) - i - 1
		}
	}
	return len(p)
}

func (d *Day) validate(p string, errs *Errors) {
	curves := 0
	for _, set := range []bool{len(d.Rate) > 0, len(d.Users) > 0, d.Trace != ""} {
		if set {
			curves++
		}
	}
	switch {
	case curves > 1:
		errs.Addf(p, "give one of rate, users or trace, not several")
	case curves == 0:
		errs.Addf(p, "needs rate (sessions_per_minute per time of day), users (concurrent users per time of day) or trace (a CSV file of either)")
	}
	validateCurve(p+".rate", len(d.Rate), func(i int) Duration { return d.Rate[i].At }, func(i int) float64 { return d.Rate[i].SessionsPerMinute }, "sessions_per_minute", errs)
	validateCurve(p+".users", len(d.Users), func(i int) Duration { return d.Users[i].At }, func(i int) float64 { return d.Users[i].Users }, "users", errs)
	if d.Length <= 0 {
		errs.Addf(p+".length", "must be positive")
	} else {
		// a point past the day's end is never reached: a typo in at or length
		past := func(curve string, n int, at func(int) Duration) {
			for i := range n {
				if at(i) > d.Length {
					errs.Addf(fmt.Sprintf("%s.%s[%d].at", p, curve, i), "%s is past the day's length (%s): the day ends before it", at(i), d.Length)
				}
			}
		}
		past("rate", len(d.Rate), func(i int) Duration { return d.Rate[i].At })
		past("users", len(d.Users), func(i int) Duration { return d.Users[i].At })
	}
	if d.Compression < 0 || math.IsNaN(d.Compression) || math.IsInf(d.Compression, 0) {
		errs.Addf(p+".compression", "must be a positive factor, got %v", d.Compression)
	}
	if d.Startup < 0 {
		errs.Addf(p+".startup", "must not be negative")
	}
	if d.SyncPeriod < 0 {
		errs.Addf(p+".sync_period", "must not be negative")
	}
	if d.MinReplicas < 0 {
		errs.Addf(p+".min_replicas", "must not be negative, got %d", d.MinReplicas)
	}
	if d.MaxReplicas < 0 || (d.MaxReplicas > 0 && d.MaxReplicas < d.MinReplicas) {
		errs.Addf(p+".max_replicas", "must be 0 (the static fleet) or at least min_replicas (%d), got %d", d.MinReplicas, d.MaxReplicas)
	}
	if len(d.Policies) == 0 {
		errs.Addf(p+".policies", "needs at least one policy (%s)", quoteList(plan.DayPolicies))
	}
	if n := len(d.StartupSensitivity); n > 0 {
		if n < 2 {
			errs.Addf(p+".startup_sensitivity", "needs at least two start-up times to compare, got %d", n)
		}
		if !slices.ContainsFunc(d.Policies, func(pol DayPolicy) bool { return pol.Kind == plan.DayTargetTracking }) {
			errs.Addf(p+".startup_sensitivity", "needs a target-tracking policy in %s.policies", p[len(p)-lastDot(p):])
		}
		for i, st := range d.StartupSensitivity {
			if st < 0 {
				errs.Addf(fmt.Sprintf("%s.startup_sensitivity[%d]", p, i), "must not be negative, got %s", st)
			}
		}
	}
	for i, pol := range d.Policies {
		pp := fmt.Sprintf("%s.policies[%d]", p, i)
		if pol.DownStabilization < 0 {
			errs.Addf(pp+".down_stabilization", "must not be negative")
		} else if pol.DownStabilization > 0 && pol.Kind == plan.DayStatic {
			errs.Addf(pp+".down_stabilization", "applies to hpa and target-tracking, not static")
		}
		switch pol.Kind {
		case plan.DayStatic:
		case plan.DayTargetTracking:
			if !(pol.Headroom > 0 && pol.Headroom <= 1) {
				errs.Addf(pp+".headroom", "must be in (0, 1], got %v", pol.Headroom)
			}
		case plan.DayHPA:
			if !slices.Contains(sim.HPAMetrics, pol.Metric) {
				errs.Addf(pp+".metric", "want one of %s, got %q", quoteList(sim.HPAMetrics), pol.Metric)
			} else if !(pol.Target > 0) || (pol.Metric == sim.MetricKVCacheUsage && pol.Target > 1) {
				errs.Addf(pp+".target", "must be positive (at most 1 for kv_cache_usage), got %v", pol.Target)
			}
			if pol.Tolerance < 0 || pol.Tolerance >= 1 {
				errs.Addf(pp+".tolerance", "must be in [0, 1), got %v", pol.Tolerance)
			}
		default:
			errs.Addf(pp+".kind", "unknown policy %q (one of %s)", pol.Kind, quoteList(plan.DayPolicies))
		}
	}
}

// resolve is the day the plan simulates; engineStartup stands in for an
// unset start-up time. It reads day.trace.
func (d *Day) resolve(engineStartup Duration) (*plan.Day, error) {
	if d == nil {
		return nil, nil
	}
	out := &plan.Day{Length: d.Length.D(), Compression: d.Compression, Startup: d.Startup.D(), SyncPeriod: d.SyncPeriod.D(),
		MinReplicas: d.MinReplicas, MaxReplicas: d.MaxReplicas}
	if out.Startup == 0 {
		out.Startup = engineStartup.D()
	}
	for _, pt := range d.Rate {
		out.Rate = append(out.Rate, workload.RatePoint{At: time.Duration(pt.At), PerSecond: pt.SessionsPerMinute / 60})
	}
	for _, pt := range d.Users {
		out.Users = append(out.Users, plan.UsersPoint{At: time.Duration(pt.At), Users: pt.Users})
	}
	if d.Trace != "" {
		var err error
		if out.Rate, out.Users, err = loadDayTrace(d.Trace); err != nil {
			return nil, err
		}
	}
	for _, st := range d.StartupSensitivity {
		out.StartupSensitivity = append(out.StartupSensitivity, st.D())
	}
	for _, pol := range d.Policies {
		out.Policies = append(out.Policies, plan.DayPolicy{Kind: pol.Kind, Headroom: pol.Headroom, Metric: pol.Metric, Target: pol.Target,
			Tolerance: pol.Tolerance, DownStabilization: pol.DownStabilization.D()})
	}
	return out, nil
}
