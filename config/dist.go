package config

import (
	"fmt"
	"math"

	"github.com/spoc-project/spoc/workload"
)

// Distribution kinds accepted by Dist.Kind.
const (
	DistConstant    = workload.DistConstant
	DistUniform     = workload.DistUniform
	DistNormal      = workload.DistNormal
	DistLognormal   = workload.DistLognormal
	DistExponential = workload.DistExponential
	DistEmpirical   = workload.DistEmpirical
)

// DistKinds lists every distribution kind.
var DistKinds = workload.DistKinds

// Dist describes a random quantity (token counts, seconds) in YAML; the type
// is owned by package workload, which samples it.
type Dist = workload.DistSpec

// Lognormal returns a lognormal Dist with the given median and sigma.
func Lognormal(median, sigma float64) Dist { return workload.Lognormal(median, sigma) }

// Constant returns a constant Dist.
func Constant(v float64) Dist { return workload.Constant(v) }

// validateDist reports problems with d; path names the field.
func validateDist(d *Dist, path string, errs *Errors) {
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
