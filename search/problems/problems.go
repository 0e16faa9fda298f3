package problems

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/spoc-project/spoc/search"
)

// Problem is a benchmark problem: a space, directions, a deterministic
// evaluation and what is known about its true front.
type Problem struct {
	Name        string
	Description string
	Space       search.Space
	Directions  []search.Direction
	// Reference is the hypervolume reference point (in the objectives' own
	// directions).
	Reference []float64
	// TrueHypervolume is the hypervolume of the true Pareto front w.r.t.
	// Reference (analytic, or from a dense sampling of the front).
	TrueHypervolume float64
	// Evaluate returns the objective values and constraint values (≤ 0
	// feasible; nil for unconstrained problems).
	Evaluate func(p search.Params) (values, constraints []float64)
}

// Objective adapts Evaluate to search.Objective.
func (p Problem) Objective() search.Objective {
	return func(ctx context.Context, t *search.TrialContext) ([]float64, []float64, error) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		v, c := p.Evaluate(t.Params)
		return v, c, nil
	}
}

// Names lists the available problems.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns the named problem (case-insensitive).
func Get(name string) (Problem, error) {
	f, ok := registry[strings.ToLower(name)]
	if !ok {
		return Problem{}, fmt.Errorf("unknown problem %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return f(), nil
}

var registry = map[string]func() Problem{
	"zdt1":   ZDT1,
	"zdt2":   ZDT2,
	"zdt3":   ZDT3,
	"dtlz2":  DTLZ2,
	"constr": Constr,
	"mixed":  Mixed,
}

// unitSpace declares n float variables x00…x(n-1) in [0, 1].
func unitSpace(n int) (search.Space, []string) {
	names := make([]string, n)
	ps := make([]search.Param, n)
	for i := range names {
		names[i] = fmt.Sprintf("x%02d", i)
		ps[i] = search.Float(names[i], 0, 1)
	}
	return search.Space{Params: ps}, names
}

func minimize(n int) []search.Direction { return make([]search.Direction, n) }

// zdt builds a 30-variable ZDT problem from its h(f1, g) shape.
func zdt(name, desc string, h func(f1, g float64) float64, trueHV float64) Problem {
	space, names := unitSpace(30)
	return Problem{
		Name: name, Description: desc, Space: space, Directions: minimize(2),
		Reference: []float64{1.1, 1.1}, TrueHypervolume: trueHV,
		Evaluate: func(p search.Params) ([]float64, []float64) {
			f1 := p.Float(names[0])
			var s float64
			for _, n := range names[1:] {
				s += p.Float(n)
			}
			g := 1 + 9*s/float64(len(names)-1)
			return []float64{f1, g * h(f1, g)}, nil
		},
	}
}

// ZDT1 has a convex front f2 = 1 − √f1. True hypervolume with reference
// (1.1, 1.1): ∫₀¹ (1.1 − 1 + √x) dx + 0.1·1.1 = 0.1 + 2/3 + 0.11.
func ZDT1() Problem {
	return zdt("zdt1", "ZDT1: 30 variables, convex front", func(f1, g float64) float64 {
		return 1 - math.Sqrt(f1/g)
	}, 0.1+2.0/3+0.11)
}

// ZDT2 has a concave front f2 = 1 − f1². True hypervolume: 0.1 + 1/3 + 0.11.
func ZDT2() Problem {
	return zdt("zdt2", "ZDT2: 30 variables, concave front", func(f1, g float64) float64 {
		return 1 - (f1/g)*(f1/g)
	}, 0.1+1.0/3+0.11)
}

// ZDT3 has a front of five disconnected pieces; its true hypervolume is
// computed from a dense sampling of f2 = 1 − √f1 − f1·sin(10πf1).
func ZDT3() Problem {
	h := func(f1, g float64) float64 {
		return 1 - math.Sqrt(f1/g) - (f1/g)*math.Sin(10*math.Pi*f1)
	}
	return zdt("zdt3", "ZDT3: 30 variables, disconnected front", h, zdt3HV())
}

var zdt3HV = sync.OnceValue(func() float64 {
	return denseHV2(func(x float64) float64 {
		return 1 - math.Sqrt(x) - x*math.Sin(10*math.Pi*x)
	}, 0, 1, []float64{1.1, 1.1})
})

// DTLZ2 has 3 objectives and 12 variables; its front is the positive octant
// of the unit sphere, so the true hypervolume is 1.1³ − π/6.
func DTLZ2() Problem {
	const m = 3
	space, names := unitSpace(12)
	return Problem{
		Name: "dtlz2", Description: "DTLZ2: 3 objectives, 12 variables, spherical front",
		Space: space, Directions: minimize(m),
		Reference: []float64{1.1, 1.1, 1.1}, TrueHypervolume: 1.1*1.1*1.1 - math.Pi/6,
		Evaluate: func(p search.Params) ([]float64, []float64) {
			x := make([]float64, len(names))
			for i, n := range names {
				x[i] = p.Float(n)
			}
			var g float64
			for _, xi := range x[m-1:] {
				g += (xi - 0.5) * (xi - 0.5)
			}
			f := make([]float64, m)
			for i := 0; i < m; i++ {
				v := 1 + g
				for _, xj := range x[:m-1-i] {
					v *= math.Cos(xj * math.Pi / 2)
				}
				if i > 0 {
					v *= math.Sin(x[m-1-i] * math.Pi / 2)
				}
				f[i] = v
			}
			return f, nil
		},
	}
}

// Constr is Deb's CONSTR problem: minimise f1 = x1 and f2 = (1 + x2)/x1
// with x1 ∈ [0.1, 1], x2 ∈ [0, 5], subject to 9x1 + x2 ≥ 6 and
// 9x1 − x2 ≥ 1. Part of the unconstrained front is cut off; the feasible
// front is f2 = (7 − 9x1)/x1 for x1 ∈ [7/18, 2/3] and f2 = 1/x1 above.
func Constr() Problem {
	space := search.Space{Params: []search.Param{search.Float("x1", 0.1, 1), search.Float("x2", 0, 5)}}
	ref := []float64{1.1, 10}
	return Problem{
		Name: "constr", Description: "CONSTR (Deb): 2 variables, 2 constraints cutting the unconstrained front",
		Space: space, Directions: minimize(2), Reference: ref,
		TrueHypervolume: constrHV(),
		Evaluate: func(p search.Params) ([]float64, []float64) {
			x1, x2 := p.Float("x1"), p.Float("x2")
			return []float64{x1, (1 + x2) / x1}, []float64{6 - (9*x1 + x2), 1 - (9*x1 - x2)}
		},
	}
}

var constrHV = sync.OnceValue(func() float64 {
	return denseHV2(func(x1 float64) float64 {
		if x1 < 2.0/3 {
			return (7 - 9*x1) / x1
		}
		return 1 / x1
	}, 7.0/18, 1, []float64{1.1, 10})
})

// denseHV2 is the hypervolume of the curve (x, f(x)), x ∈ [lo, hi], sampled
// at 200,001 points.
func denseHV2(f func(float64) float64, lo, hi float64, ref []float64) float64 {
	const n = 200000
	pts := make([][]float64, n+1)
	for i := range pts {
		x := lo + (hi-lo)*float64(i)/n
		pts[i] = []float64{x, f(x)}
	}
	v, err := search.Hypervolume(pts, ref)
	if err != nil {
		panic(err) // static, finite input
	}
	return v
}
