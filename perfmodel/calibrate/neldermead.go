package calibrate

import (
	"context"
	"sort"
)

// NelderMead minimises f from x0 with the standard Nelder–Mead simplex
// (reflection 1, expansion 2, contraction ½, shrink ½), starting from a
// simplex of x0 and x0 + step·eᵢ. It stops after maxEvals evaluations, when
// the best and worst vertex values differ by less than tol, or when ctx is
// done. It returns the best vertex, its value and the evaluations used.
func NelderMead(ctx context.Context, f func([]float64) float64, x0 []float64, step, tol float64, maxEvals int) ([]float64, float64, int, error) {
	n := len(x0)
	type vertex struct {
		x []float64
		v float64
	}
	evals := 0
	eval := func(x []float64) float64 { evals++; return f(x) }
	simplex := make([]vertex, n+1)
	for i := range simplex {
		x := append([]float64(nil), x0...)
		if i > 0 {
			x[i-1] += step
		}
		simplex[i] = vertex{x, eval(x)}
	}
	point := func(centroid, towards []float64, coef float64) []float64 {
		x := make([]float64, n)
		for j := range x {
			x[j] = centroid[j] + coef*(towards[j]-centroid[j])
		}
		return x
	}
	for evals < maxEvals {
		if err := ctx.Err(); err != nil {
			return simplex[0].x, simplex[0].v, evals, err
		}
		sort.SliceStable(simplex, func(a, b int) bool { return simplex[a].v < simplex[b].v })
		best, worst := simplex[0], simplex[n]
		if worst.v-best.v < tol {
			break
		}
		centroid := make([]float64, n)
		for _, s := range simplex[:n] {
			for j := range centroid {
				centroid[j] += s.x[j] / float64(n)
			}
		}
		xr := point(centroid, worst.x, -1)
		vr := eval(xr)
		switch {
		case vr < best.v:
			xe := point(centroid, worst.x, -2)
			if ve := eval(xe); ve < vr {
				simplex[n] = vertex{xe, ve}
			} else {
				simplex[n] = vertex{xr, vr}
			}
		case vr < simplex[n-1].v:
			simplex[n] = vertex{xr, vr}
		default:
			// Contract towards the better of the worst and its reflection.
			toward, tv := worst.x, worst.v
			if vr < worst.v {
				toward, tv = xr, vr
			}
			xc := point(centroid, toward, 0.5)
			if vc := eval(xc); vc < tv {
				simplex[n] = vertex{xc, vc}
				continue
			}
			for i := 1; i <= n; i++ {
				x := point(best.x, simplex[i].x, 0.5)
				simplex[i] = vertex{x, eval(x)}
			}
		}
	}
	sort.SliceStable(simplex, func(a, b int) bool { return simplex[a].v < simplex[b].v })
	return simplex[0].x, simplex[0].v, evals, nil
}
