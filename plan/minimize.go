package plan

import (
	"context"
	"math"
	"sort"
)

// minimize is a Nelder–Mead simplex search for the minimum of f from x0
// with an initial simplex of the given step along each axis. It stops when
// the simplex's values differ by less than tol or after maxEvals
// evaluations of f, and returns the best point found. The correction fit
// has two or three parameters and a noisy, non-smooth objective (replayed
// percentiles): the simplex needs no gradient.
func minimize(ctx context.Context, f func([]float64) float64, x0 []float64, step, tol float64, maxEvals int) ([]float64, error) {
	n := len(x0)
	type vertex struct {
		x []float64
		v float64
	}
	evals := 0
	eval := func(x []float64) vertex {
		evals++
		v := f(x)
		if math.IsNaN(v) {
			v = math.Inf(1)
		}
		return vertex{x: x, v: v}
	}
	simplex := make([]vertex, 0, n+1)
	simplex = append(simplex, eval(append([]float64(nil), x0...)))
	for i := range n {
		x := append([]float64(nil), x0...)
		x[i] += step
		simplex = append(simplex, eval(x))
	}
	// combine returns c + t·(c − w): the reflection (t = 1), expansion
	// (2), outside (0.5) and inside (−0.5) contractions of w through the
	// centroid c.
	combine := func(c, w []float64, t float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = c[i] + t*(c[i]-w[i])
		}
		return x
	}
	for evals < maxEvals {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
		best, worst := simplex[0], simplex[n]
		if math.Abs(worst.v-best.v) < tol {
			break
		}
		c := make([]float64, n)
		for _, s := range simplex[:n] {
			for i := range c {
				c[i] += s.x[i] / float64(n)
			}
		}
		r := eval(combine(c, worst.x, 1))
		switch {
		case r.v < best.v:
			if e := eval(combine(c, worst.x, 2)); e.v < r.v {
				simplex[n] = e
			} else {
				simplex[n] = r
			}
		case r.v < simplex[n-1].v:
			simplex[n] = r
		default:
			t := 0.5
			if r.v >= worst.v {
				t = -0.5
			}
			if k := eval(combine(c, worst.x, t)); k.v < math.Min(r.v, worst.v) {
				simplex[n] = k
				continue
			}
			// shrink towards the best vertex
			for j := 1; j <= n; j++ {
				x := make([]float64, n)
				for i := range x {
					x[i] = best.x[i] + 0.5*(simplex[j].x[i]-best.x[i])
				}
				simplex[j] = eval(x)
			}
		}
	}
	sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
	return simplex[0].x, nil
}
