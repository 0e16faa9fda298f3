package calibrate

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"
)

// levenbergMarquardt refines x0 to minimise ‖r(x)‖² with Levenberg–Marquardt
// on a forward-difference Jacobian (step h in the free space). It accepts
// only steps that lower the cost, so it never returns a worse point than x0.
// r may reuse the slice it returns between calls. It stops after maxEvals
// evaluations of r, when a step improves the cost by
// less than tol relative, or when ctx is done.
func levenbergMarquardt(ctx context.Context, r func([]float64) []float64, x0 []float64, h, tol float64, maxEvals int) ([]float64, float64, int, error) {
	n := len(x0)
	evals := 1
	x := append([]float64(nil), x0...)
	res := append([]float64(nil), r(x)...) // r may reuse its result slice
	cost := sumSquares(res)
	m := len(res)
	lambda := 1e-3
	jac := mat.NewDense(m, n, nil)
	xt := make([]float64, n)
	for evals+n+1 <= maxEvals && !math.IsInf(cost, 1) {
		if err := ctx.Err(); err != nil {
			return x, cost, evals, err
		}
		for i := range n {
			copy(xt, x)
			xt[i] += h
			ri := r(xt)
			evals++
			for j := range m {
				jac.Set(j, i, (ri[j]-res[j])/h)
			}
		}
		var jtj mat.Dense
		jtj.Mul(jac.T(), jac)
		var g mat.VecDense
		g.MulVec(jac.T(), mat.NewVecDense(m, res))
		improved := false
		for evals < maxEvals && lambda < 1e10 {
			a := mat.DenseCopyOf(&jtj)
			for i := range n {
				a.Set(i, i, jtj.At(i, i)*(1+lambda)+1e-12)
			}
			var step mat.VecDense
			if err := step.SolveVec(a, &g); err != nil {
				lambda *= 4
				continue
			}
			for i := range n {
				xt[i] = x[i] - step.AtVec(i)
			}
			rt := r(xt)
			evals++
			if c := sumSquares(rt); c < cost {
				rel := (cost - c) / cost
				copy(x, xt)
				copy(res, rt)
				cost = c
				lambda = math.Max(lambda/3, 1e-9)
				improved = rel > tol
				break
			}
			lambda *= 4
		}
		if !improved {
			break
		}
	}
	return x, cost, evals, nil
}

func sumSquares(r []float64) float64 {
	var s float64
	for _, v := range r {
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		s += v * v
	}
	return s
}
