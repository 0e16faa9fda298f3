package config

import (
	"fmt"
	"math"
)

// Distribution kinds accepted by Dist.Kind.
const (
	DistConstant    = "constant"
	DistUniform     = "uniform"
	DistNormal      = "normal"
	DistLognormal   = "lognormal"
	DistExponential = "exponential"
	DistEmpirical   = "empirical"
)

// DistKinds lists every distribution kind.
var DistKinds = []string{DistConstant, DistUniform, DistNormal, DistLognormal, DistExponential, DistEmpirical}

// Dist describes a random quantity (token counts, seconds). Which fields are
// used depends on Kind; Min and Max clip (truncate) any kind. The sampling
// itself lives in package workload; this is the declarative spec.
type Dist struct {
	Kind    string    `yaml:"kind" doc:"constant | uniform | normal | lognormal | exponential | empirical"`
	Value   float64   `yaml:"value,omitempty" doc:"constant: the value"`
	Low     float64   `yaml:"low,omitempty" doc:"uniform: lower bound"`
	High    float64   `yaml:"high,omitempty" doc:"uniform: upper bound"`
	Mean    float64   `yaml:"mean,omitempty" doc:"normal and exponential: the mean"`
	Stddev  float64   `yaml:"stddev,omitempty" doc:"normal: standard deviation (truncated to min/max)"`
	Median  float64   `yaml:"median,omitempty" doc:"lognormal: the median"`
	Sigma   float64   `yaml:"sigma,omitempty" doc:"lognormal: sigma of the underlying normal (or give p90 instead)"`
	P90     float64   `yaml:"p90,omitempty" doc:"lognormal: the 90th percentile, an alternative to sigma"`
	Values  []float64 `yaml:"values,omitempty" doc:"empirical: observed values (or histogram bin edges when weights has one entry fewer)"`
	Weights []float64 `yaml:"weights,omitempty" doc:"empirical: weight per value, or per histogram bin"`
	Min     *float64  `yaml:"min,omitempty" doc:"lower clip applied to every kind"`
	Max     *float64  `yaml:"max,omitempty" doc:"upper clip applied to every kind"`
}

// Lognormal returns a lognormal Dist with the given median and sigma.
func Lognormal(median, sigma float64) Dist {
	return Dist{Kind: DistLognormal, Median: median, Sigma: sigma}
}

// Constant returns a constant Dist.
func Constant(v float64) Dist { return Dist{Kind: DistConstant, Value: v} }

// Clip returns d with Min and Max set.
func (d Dist) Clip(lo, hi float64) Dist {
	d.Min, d.Max = &lo, &hi
	return d
}

// validate reports problems with d; path names the field.
func (d *Dist) validate(path string, errs *Errors) {
	pos := func(field string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs.Addf(path+"."+field, "must be a positive number, got %v", v)
		}
	}
	switch d.Kind {
	case DistConstant:
		if d.Value < 0 || math.IsNaN(d.Value) {
			errs.Addf(path+".value", "must not be negative, got %v", d.Value)
		}
	case DistUniform:
		if d.Low < 0 {
			errs.Addf(path+".low", "must not be negative, got %v", d.Low)
		}
		if d.High < d.Low {
			errs.Addf(path+".high", "must be >= low (%v), got %v", d.Low, d.High)
		}
	case DistNormal:
		pos("mean", d.Mean)
		if d.Stddev < 0 {
			errs.Addf(path+".stddev", "must not be negative, got %v", d.Stddev)
		}
	case DistLognormal:
		pos("median", d.Median)
		switch {
		case d.Sigma != 0 && d.P90 != 0:
			errs.Addf(path+".p90", "give sigma or p90, not both")
		case d.P90 != 0:
			if d.P90 < d.Median {
				errs.Addf(path+".p90", "must be >= median (%v), got %v", d.Median, d.P90)
			}
		case d.Sigma < 0:
			errs.Addf(path+".sigma", "must not be negative, got %v", d.Sigma)
		}
	case DistExponential:
		pos("mean", d.Mean)
	case DistEmpirical:
		if len(d.Values) == 0 {
			errs.Addf(path+".values", "empirical distribution needs at least one value")
			break
		}
		if n := len(d.Weights); n != 0 && n != len(d.Values) && n != len(d.Values)-1 {
			errs.Addf(path+".weights", "needs %d entries (one per value) or %d (one per histogram bin), got %d", len(d.Values), len(d.Values)-1, n)
		}
		total := 0.0
		for i, w := range d.Weights {
			if w < 0 || math.IsNaN(w) {
				errs.Addf(fmt.Sprintf("%s.weights[%d]", path, i), "must not be negative, got %v", w)
			}
			total += w
		}
		if len(d.Weights) > 0 && total == 0 {
			errs.Addf(path+".weights", "weights sum to 0: at least one must be positive")
		}
		if len(d.Weights) == len(d.Values)-1 {
			for i := 1; i < len(d.Values); i++ {
				if d.Values[i] < d.Values[i-1] {
					errs.Addf(fmt.Sprintf("%s.values[%d]", path, i), "histogram bin edges must be increasing")
					break
				}
			}
		}
	case "":
		errs.Addf(path+".kind", "missing distribution kind (one of %s)", quoteList(DistKinds))
	default:
		errs.Addf(path+".kind", "unknown distribution %q (one of %s)", d.Kind, quoteList(DistKinds))
	}
	if d.Min != nil && d.Max != nil && *d.Max < *d.Min {
		errs.Addf(path+".max", "must be >= min (%v), got %v", *d.Min, *d.Max)
	}
	if d.Min != nil && *d.Min < 0 {
		errs.Addf(path+".min", "must not be negative, got %v", *d.Min)
	}
}

// UpperBound is the largest value d can produce, or +Inf when unbounded.
func (d *Dist) UpperBound() float64 {
	hi := math.Inf(1)
	switch d.Kind {
	case DistConstant:
		hi = d.Value
	case DistUniform:
		hi = d.High
	case DistEmpirical:
		hi = math.Inf(-1)
		for _, v := range d.Values {
			hi = math.Max(hi, v)
		}
	}
	if d.Max != nil && *d.Max < hi {
		hi = *d.Max
	}
	return hi
}

// LowerBound is the smallest value d can produce.
func (d *Dist) LowerBound() float64 {
	lo := 0.0
	switch d.Kind {
	case DistConstant:
		lo = d.Value
	case DistUniform:
		lo = d.Low
	case DistEmpirical:
		lo = math.Inf(1)
		for _, v := range d.Values {
			lo = math.Min(lo, v)
		}
	}
	if d.Min != nil && *d.Min > lo {
		lo = *d.Min
	}
	return lo
}

// Typical is a central value of d (median where known), used for checks such
// as "context at start is above the maximum".
func (d *Dist) Typical() float64 {
	v := 0.0
	switch d.Kind {
	case DistConstant:
		v = d.Value
	case DistUniform:
		v = (d.Low + d.High) / 2
	case DistNormal, DistExponential:
		v = d.Mean
	case DistLognormal:
		v = d.Median
	case DistEmpirical:
		if len(d.Values) > 0 {
			v = d.Values[len(d.Values)/2]
		}
	}
	return math.Max(d.LowerBound(), math.Min(v, d.UpperBound()))
}
