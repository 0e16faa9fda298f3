package config

import (
	"fmt"
	"math"
	"time"

	"github.com/spoc-project/spoc/workload"
)

// Arrivals makes spoc run and spoc sim run open-loop (run.arrivals):
// sessions arrive by a Poisson process with a rate that may vary over the
// run, or at an imported trace's recorded timestamps, and each runs its
// turns closed-loop and ends. How many sessions are in progress at once is
// then the run's outcome; run.users, run.ramp and run.mid_session_start do
// not apply (workload.Arrivals, docs/loadgen.md "Open-loop arrivals").
type Arrivals struct {
	Rate        []RatePoint `yaml:"rate,omitempty" doc:"Session arrival rate over the run's clock (warm-up included), a piecewise-linear curve: the first point at 0s, each later one after the one before; the rate moves linearly between points and stays at the last point's after it. Sessions start by a Poisson process of this rate."`
	Trace       bool        `yaml:"trace,omitempty" doc:"Sessions start at the recorded timestamps of the imported trace (workload.import) instead of by a rate; the trace must have timestamps."`
	Compression float64     `yaml:"compression,omitempty" doc:"Shrinks the clock of the arrivals: a trace's timestamps and the rate curve's time axis are divided by it (the rate multiplied), never think times or service. 0 or 1: as recorded."`
}

// RatePoint is one point of run.arrivals.rate.
type RatePoint struct {
	At                Duration `yaml:"at" doc:"Time since the run's start."`
	SessionsPerMinute float64  `yaml:"sessions_per_minute" doc:"Session arrival rate at that time."`
}

func (a *Arrivals) validate(p string, imported bool, errs *Errors) {
	switch {
	case a.Trace && len(a.Rate) > 0:
		errs.Addf(p, "give rate or trace: true, not both")
	case !a.Trace && len(a.Rate) == 0:
		errs.Addf(p, "needs rate (a curve of sessions_per_minute) or trace: true")
	case a.Trace && !imported:
		errs.Addf(p+".trace", "replays an imported trace's timestamps: set workload.import")
	}
	if a.Compression < 0 || math.IsNaN(a.Compression) || math.IsInf(a.Compression, 0) {
		errs.Addf(p+".compression", "must be a positive factor, got %v", a.Compression)
	}
	for i, pt := range a.Rate {
		ip := fmt.Sprintf("%s.rate[%d]", p, i)
		switch {
		case pt.At < 0:
			errs.Addf(ip+".at", "must not be negative, got %s", pt.At)
		case i == 0 && pt.At != 0:
			errs.Addf(ip+".at", "the curve starts at 0s, got %s", pt.At)
		case i > 0 && pt.At <= a.Rate[i-1].At:
			errs.Addf(ip+".at", "must be after rate[%d].at (%s), got %s: times must increase", i-1, a.Rate[i-1].At, pt.At)
		}
		if !(pt.SessionsPerMinute >= 0) || math.IsInf(pt.SessionsPerMinute, 0) {
			errs.Addf(ip+".sessions_per_minute", "must be a non-negative number, got %v", pt.SessionsPerMinute)
		}
	}
}

// process is the arrival process the schedule runs; the seed is the run's
// (capacity sets it).
func (a *Arrivals) process() *workload.Arrivals {
	if a == nil {
		return nil
	}
	out := &workload.Arrivals{Trace: a.Trace, Compression: a.Compression}
	for _, pt := range a.Rate {
		out.Rate = append(out.Rate, workload.RatePoint{At: time.Duration(pt.At), PerSecond: pt.SessionsPerMinute / 60})
	}
	return out
}
