package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// RatePoint is one point of a session arrival rate curve: from At on, the
// rate moves linearly to the next point's; after the last point it stays.
type RatePoint struct {
	At        time.Duration
	PerSecond float64
}

// Arrivals is an open-loop session arrival process: sessions start when the
// process says, not when a closed-loop user finishes its previous one, so
// the number of sessions in progress is an outcome of the run rather than
// its input. Each arriving session runs its turns closed-loop (think time
// after each reply) and then ends; it is never followed by another.
//
// Exactly one of Rate and Trace is set:
//
//   - Rate: a Poisson process whose intensity λ(t) is the piecewise-linear
//     curve through the points (the first at 0; constant after the last).
//     Arrival k is at Λ⁻¹(E₁+…+E_k), Λ the integrated rate and E_i unit
//     exponentials drawn from Seed: the exact inhomogeneous process, not
//     thinning, and a pure function of the seed and the curve.
//   - Trace: session k of the source (an imported trace, which has Len
//     sessions) arrives at its recorded Script.Start.
//
// Compression divides the arrivals' clock: a trace's recorded times, and
// the curve's time axis (an hour's curve compressed by 60 runs in a minute
// with 60× the rate, the same sessions sooner). It never touches think
// times or service: a compressed run is more load, not a faster one. 0
// means 1.
type Arrivals struct {
	Rate        []RatePoint
	Trace       bool
	Compression float64
	Seed        uint64
}

// Validate reports every problem with the process in one error.
func (a *Arrivals) Validate() error {
	var errs []string
	switch {
	case a.Trace && len(a.Rate) > 0:
		errs = append(errs, "arrivals take a rate curve or a trace's timestamps, not both")
	case !a.Trace && len(a.Rate) == 0:
		errs = append(errs, "arrivals need a rate curve or a trace's timestamps")
	}
	if a.Compression < 0 || math.IsNaN(a.Compression) || math.IsInf(a.Compression, 0) {
		errs = append(errs, fmt.Sprintf("compression must be a positive factor, got %v", a.Compression))
	}
	for i, p := range a.Rate {
		switch {
		case i == 0 && p.At != 0:
			errs = append(errs, fmt.Sprintf("rate point 0 must be at 0, got %s", p.At))
		case i > 0 && p.At <= a.Rate[i-1].At:
			errs = append(errs, fmt.Sprintf("rate point %d at %s is not after point %d at %s", i, p.At, i-1, a.Rate[i-1].At))
		}
		if !(p.PerSecond >= 0) || math.IsInf(p.PerSecond, 0) {
			errs = append(errs, fmt.Sprintf("rate point %d: rate must be a non-negative number, got %v", i, p.PerSecond))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (a *Arrivals) compression() float64 {
	if a.Compression == 0 {
		return 1
	}
	return a.Compression
}

// RateAt is the curve's arrival rate in sessions per second at t seconds
// of the compressed clock: c·λ(c·t).
func (a *Arrivals) RateAt(t float64) float64 {
	c := a.compression()
	return c * a.rawRate(c*t)
}

// Expected is the expected number of arrivals in [from, to) seconds of the
// compressed clock: the integrated rate.
func (a *Arrivals) Expected(from, to float64) float64 {
	c := a.compression()
	return a.integral(c*to) - a.integral(c*from)
}

func (a *Arrivals) rawRate(t float64) float64 {
	pts := a.Rate
	if len(pts) == 0 || t < 0 {
		return 0
	}
	i := sort.Search(len(pts), func(i int) bool { return pts[i].At.Seconds() > t }) - 1
	if i >= len(pts)-1 {
		return pts[len(pts)-1].PerSecond
	}
	t0, t1 := pts[i].At.Seconds(), pts[i+1].At.Seconds()
	r0, r1 := pts[i].PerSecond, pts[i+1].PerSecond
	return r0 + (r1-r0)*(t-t0)/(t1-t0)
}

// integral is Λ(t), the raw curve's integral from 0 to t.
func (a *Arrivals) integral(t float64) float64 {
	var sum float64
	pts := a.Rate
	for i := range pts {
		t0 := pts[i].At.Seconds()
		if t <= t0 {
			break
		}
		r0 := pts[i].PerSecond
		if i == len(pts)-1 {
			sum += r0 * (t - t0)
			break
		}
		t1 := math.Min(t, pts[i+1].At.Seconds())
		r1 := r0 + (pts[i+1].PerSecond-r0)*(t1-t0)/(pts[i+1].At.Seconds()-t0)
		sum += (r0 + r1) / 2 * (t1 - t0)
	}
	return sum
}

// sessionCounter is a source that knows how many sessions it holds: an
// imported trace.
type sessionCounter interface{ Len() int }

// Times returns when each session arrives, in seconds since the run's
// start: session k of the result is user k of the schedule. For a rate
// curve, every arrival before end; for a trace, every session of src, in
// the trace's order (a time at or after end means the session never
// starts). A trace whose sessions all start at 0 has no timestamps to
// replay and is an error, as is a source that is not a trace.
func (a *Arrivals) Times(src Source, end float64) ([]float64, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	c := a.compression()
	if a.Trace {
		n, ok := src.(sessionCounter)
		if !ok {
			return nil, errors.New("arrivals from a trace need an imported trace (workload.import)")
		}
		out := make([]float64, n.Len())
		stamped := false
		for k := range out {
			sc, err := src.Session(k, 0)
			if err != nil {
				return nil, fmt.Errorf("trace session %d: %w", k, err)
			}
			out[k] = sc.Start.Seconds() / c
			stamped = stamped || sc.Start > 0
		}
		if len(out) > 1 && !stamped {
			return nil, errors.New("the imported trace has no timestamps (every session starts at 0): replay it closed-loop instead")
		}
		return out, nil
	}
	rng := rand.New(rand.NewPCG(a.Seed, 0x6172726976616c73))
	var out []float64
	rawEnd := end * c
	s := 0.0     // Λ of the next arrival
	seg := 0     // the curve segment holding it
	baseL := 0.0 // Λ at that segment's start
	pts := a.Rate
	for {
		s += rng.ExpFloat64()
		// advance to the segment holding Λ = s
		for {
			t0 := pts[seg].At.Seconds()
			r0 := pts[seg].PerSecond
			if seg == len(pts)-1 {
				if r0 <= 0 {
					return out, nil
				}
				t := t0 + (s-baseL)/r0
				if t >= rawEnd {
					return out, nil
				}
				out = append(out, t/c)
				break
			}
			t1, r1 := pts[seg+1].At.Seconds(), pts[seg+1].PerSecond
			area := (r0 + r1) / 2 * (t1 - t0)
			if s-baseL >= area {
				baseL += area
				seg++
				if t1 >= rawEnd {
					return out, nil
				}
				continue
			}
			// solve r0·x + (slope/2)·x² = d for x in [0, t1-t0), in the
			// form that is stable for a zero or negative slope
			d := s - baseL
			slope := (r1 - r0) / (t1 - t0)
			x := 2 * d / (r0 + math.Sqrt(math.Max(0, r0*r0+2*slope*d)))
			t := t0 + x
			if t >= rawEnd {
				return out, nil
			}
			out = append(out, t/c)
			break
		}
	}
}
