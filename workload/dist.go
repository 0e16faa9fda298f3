package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// z90 is the standard normal's 90th percentile, relating a lognormal's p90 to
// its sigma: p90 = median * exp(sigma * z90).
const z90 = 1.2815515655446004

// maxRedraws bounds the rejection sampling that truncates a distribution to
// its [min, max]; a sample still outside after that many draws is clamped.
const maxRedraws = 32

// Dist samples a random quantity described by a DistSpec. Min and max
// truncate: samples outside are drawn again (up to 32 times), then clamped,
// so a bound far in the tail does not pile up mass at the bound.
type Dist struct {
	spec     DistSpec
	mu, sig  float64   // lognormal parameters
	cum      []float64 // empirical: cumulative weights
	lo, hi   float64   // truncation bounds
	hasBound bool
}

// NewDist checks spec and prepares a sampler.
func NewDist(spec DistSpec) (*Dist, error) {
	d := &Dist{spec: spec, lo: math.Inf(-1), hi: math.Inf(1)}
	if spec.Min != nil {
		d.lo, d.hasBound = *spec.Min, true
	}
	if spec.Max != nil {
		d.hi, d.hasBound = *spec.Max, true
	}
	if d.lo > d.hi {
		return nil, fmt.Errorf("distribution %s: max %v below min %v", spec.Kind, d.hi, d.lo)
	}
	switch spec.Kind {
	case DistConstant:
	case DistUniform:
		if spec.High < spec.Low {
			return nil, fmt.Errorf("uniform distribution: high %v below low %v", spec.High, spec.Low)
		}
	case DistNormal:
		if spec.Stddev < 0 {
			return nil, fmt.Errorf("normal distribution: negative stddev %v", spec.Stddev)
		}
	case DistLognormal:
		if !(spec.Median > 0) {
			return nil, fmt.Errorf("lognormal distribution: median must be positive, got %v", spec.Median)
		}
		d.mu, d.sig = math.Log(spec.Median), spec.Sigma
		if spec.P90 != 0 {
			if spec.P90 < spec.Median {
				return nil, fmt.Errorf("lognormal distribution: p90 %v below median %v", spec.P90, spec.Median)
			}
			d.sig = math.Log(spec.P90/spec.Median) / z90
		}
		if d.sig < 0 {
			return nil, fmt.Errorf("lognormal distribution: negative sigma %v", d.sig)
		}
	case DistExponential:
		if !(spec.Mean > 0) {
			return nil, fmt.Errorf("exponential distribution: mean must be positive, got %v", spec.Mean)
		}
	case DistEmpirical:
		n := len(spec.Values)
		if n == 0 {
			return nil, fmt.Errorf("empirical distribution: no values")
		}
		w := spec.Weights
		bins := len(w) == n-1 && n > 1
		if len(w) != 0 && len(w) != n && !bins {
			return nil, fmt.Errorf("empirical distribution: %d weights for %d values", len(w), n)
		}
		m := n
		if bins {
			m = n - 1
		}
		d.cum = make([]float64, m)
		total := 0.0
		for i := 0; i < m; i++ {
			wi := 1.0
			if len(w) > 0 {
				wi = w[i]
			}
			if wi < 0 || math.IsNaN(wi) {
				return nil, fmt.Errorf("empirical distribution: weight %d is %v", i, wi)
			}
			total += wi
			d.cum[i] = total
		}
		if !(total > 0) {
			return nil, fmt.Errorf("empirical distribution: weights sum to %v", total)
		}
	default:
		return nil, fmt.Errorf("unknown distribution %q", spec.Kind)
	}
	return d, nil
}

// Sample draws one value.
func (d *Dist) Sample(r *rand.Rand) float64 {
	for i := 0; ; i++ {
		v := d.raw(r)
		if !d.hasBound || (v >= d.lo && v <= d.hi) {
			return v
		}
		if i == maxRedraws || d.spec.Kind == DistConstant {
			return math.Max(d.lo, math.Min(d.hi, v))
		}
	}
}

func (d *Dist) raw(r *rand.Rand) float64 {
	s := &d.spec
	switch s.Kind {
	case DistConstant:
		return s.Value
	case DistUniform:
		return s.Low + (s.High-s.Low)*r.Float64()
	case DistNormal:
		return s.Mean + s.Stddev*r.NormFloat64()
	case DistLognormal:
		return math.Exp(d.mu + d.sig*r.NormFloat64())
	case DistExponential:
		return s.Mean * r.ExpFloat64()
	case DistEmpirical:
		u := r.Float64() * d.cum[len(d.cum)-1]
		i := sort.Search(len(d.cum), func(i int) bool { return d.cum[i] > u })
		if i >= len(d.cum) {
			i = len(d.cum) - 1
		}
		if len(d.cum) == len(s.Values)-1 { // histogram: uniform within bin i
			return s.Values[i] + (s.Values[i+1]-s.Values[i])*r.Float64()
		}
		return s.Values[i]
	}
	return 0
}

// Median is the distribution's median before truncation where it is known
// in closed form, otherwise its typical value.
func (d *Dist) Median() float64 {
	if d.spec.Kind == DistLognormal {
		return d.spec.Median
	}
	return d.spec.Typical()
}

// sampleInt draws a value rounded to an integer and clamped to [lo, hi].
func (d *Dist) sampleInt(r *rand.Rand, lo, hi int) int {
	v := math.Round(d.Sample(r))
	if v < float64(lo) {
		return lo
	}
	if v > float64(hi) {
		return hi
	}
	return int(v)
}
