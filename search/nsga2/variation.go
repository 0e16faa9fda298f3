package nsga2

import (
	"math"
	"math/rand/v2"

	"github.com/spoc-project/spoc/search"
)

// child builds one offspring of parents a and b: crossover with probability
// CrossoverProb (otherwise a copy of a), then per-parameter mutation.
func (s *Sampler) child(space search.Space, a, b search.Params, r *rand.Rand) search.Params {
	out := make(search.Params, len(space.Params))
	cross := r.Float64() < s.opt.CrossoverProb
	for _, sp := range space.Params {
		va, vb := a[sp.Name], b[sp.Name]
		v := va
		if cross {
			switch {
			case s.opt.Crossover == SBX && sp.Kind != search.KindCategorical:
				v = sbx(sp, va, vb, s.opt.SBXEta, r)
			case r.Float64() < s.opt.SwappingProb:
				v = vb
			}
		}
		out[sp.Name] = v
	}
	pm := s.opt.MutationProb
	if pm == 0 {
		pm = 1 / float64(len(space.Params))
	}
	for _, sp := range space.Params {
		if r.Float64() < pm {
			out[sp.Name] = mutate(sp, out[sp.Name], s.opt.MutationEta, r)
		}
	}
	// Parents decoded from storage may carry JSON number types; canonicalise
	// every value through the parameter's own grid.
	for _, sp := range space.Params {
		if sp.Kind != search.KindCategorical {
			out[sp.Name] = sp.FromInternal(sp.ToInternal(out[sp.Name]))
		} else if i := sp.ChoiceIndex(out[sp.Name]); i >= 0 {
			out[sp.Name] = sp.Choices[i]
		} else {
			out[sp.Name] = sp.Uniform(r)
		}
	}
	return out
}

// sbx is bounded simulated binary crossover (Deb & Agrawal 1995) of one
// numeric parameter in internal coordinates; it returns one of the two
// children, each with probability 1/2, and leaves the value alone half of
// the time so that not every variable moves at once.
func sbx(sp search.Param, va, vb any, eta float64, r *rand.Rand) any {
	x1, x2 := sp.ToInternal(va), sp.ToInternal(vb)
	if r.Float64() >= 0.5 || math.Abs(x1-x2) < 1e-14 {
		if r.IntN(2) == 0 {
			return va
		}
		return vb
	}
	lo, hi := sp.Bounds()
	if x1 > x2 {
		x1, x2 = x2, x1
	}
	u := r.Float64()
	spread := func(beta float64) float64 {
		alpha := 2 - math.Pow(beta, -(eta+1))
		if u <= 1/alpha {
			return math.Pow(u*alpha, 1/(eta+1))
		}
		return math.Pow(1/(2-u*alpha), 1/(eta+1))
	}
	d := x2 - x1
	c1 := 0.5 * (x1 + x2 - spread(1+2*(x1-lo)/d)*d)
	c2 := 0.5 * (x1 + x2 + spread(1+2*(hi-x2)/d)*d)
	c := c1
	if r.IntN(2) == 0 {
		c = c2
	}
	return sp.FromInternal(math.Max(lo, math.Min(hi, c)))
}

// mutate perturbs one value: polynomial mutation (Deb & Goyal 1996) for
// numeric parameters in internal coordinates, a different choice for
// categoricals.
func mutate(sp search.Param, v any, eta float64, r *rand.Rand) any {
	if sp.Kind == search.KindCategorical {
		n := len(sp.Choices)
		if n < 2 {
			return v
		}
		i := sp.ChoiceIndex(v)
		j := r.IntN(n - 1)
		if i >= 0 && j >= i {
			j++
		}
		return sp.Choices[j]
	}
	lo, hi := sp.Bounds()
	if hi <= lo {
		return v
	}
	x := sp.ToInternal(v)
	d1, d2 := (x-lo)/(hi-lo), (hi-x)/(hi-lo)
	u := r.Float64()
	var dq float64
	if u < 0.5 {
		dq = math.Pow(2*u+(1-2*u)*math.Pow(1-d1, eta+1), 1/(eta+1)) - 1
	} else {
		dq = 1 - math.Pow(2*(1-u)+2*(u-0.5)*math.Pow(1-d2, eta+1), 1/(eta+1))
	}
	return sp.FromInternal(math.Max(lo, math.Min(hi, x+dq*(hi-lo))))
}
