package workload

import "math"

// Distribution kinds accepted by DistSpec.Kind.
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

// DistSpec describes a random quantity (token counts, seconds). Which fields
// are used depends on Kind; Min and Max clip (truncate) any kind. It is the
// declarative spec that package config decodes from YAML; NewDist turns it
// into a sampler.
type DistSpec struct {
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

// Lognormal returns a lognormal DistSpec with the given median and sigma.
func Lognormal(median, sigma float64) DistSpec {
	return DistSpec{Kind: DistLognormal, Median: median, Sigma: sigma}
}

// Constant returns a constant DistSpec.
func Constant(v float64) DistSpec { return DistSpec{Kind: DistConstant, Value: v} }

// Clip returns d with Min and Max set.
func (d DistSpec) Clip(lo, hi float64) DistSpec {
	d.Min, d.Max = &lo, &hi
	return d
}

// UpperBound is the largest value d can produce, or +Inf when unbounded.
func (d *DistSpec) UpperBound() float64 {
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
func (d *DistSpec) LowerBound() float64 {
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
func (d *DistSpec) Typical() float64 {
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
