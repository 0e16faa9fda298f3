package calibrate

import (
	"context"
	"math"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

func TestNelderMeadRosenbrock(t *testing.T) {
	rosen := func(x []float64) float64 {
		return 100*math.Pow(x[1]-x[0]*x[0], 2) + math.Pow(1-x[0], 2)
	}
	x, v, evals, err := NelderMead(context.Background(), rosen, []float64{-1.2, 1}, 0.5, 1e-14, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-1) > 1e-3 || math.Abs(x[1]-1) > 1e-3 || v > 1e-6 {
		t.Errorf("minimum at %v (f=%g) after %d evaluations, want (1, 1)", x, v, evals)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := NelderMead(ctx, rosen, []float64{0, 0}, 0.5, 0, 100); err == nil {
		t.Error("cancelled context ignored")
	}
}

func TestLevenbergMarquardtLinear(t *testing.T) {
	// Residuals of fitting y = a·x + b to exact data: the minimum is a=2, b=-1.
	xs := []float64{0, 1, 2, 3, 4}
	r := func(p []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = p[0]*x + p[1] - (2*x - 1)
		}
		return out
	}
	p, cost, _, err := levenbergMarquardt(context.Background(), r, []float64{0, 0}, 1e-6, 1e-15, 200)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p[0]-2) > 1e-6 || math.Abs(p[1]+1) > 1e-6 || cost > 1e-10 {
		t.Errorf("fit %v cost %g, want (2, -1)", p, cost)
	}
}

func TestFitErrors(t *testing.T) {
	pts := readReference(t)[:2]
	tests := []struct {
		name string
		pts  []Point
		opts Options
	}{
		{"no points", nil, Options{}},
		{"unknown factor", pts, Options{Params: []string{"magic"}}},
		{"no factors", pts, Options{Params: []string{}}},
		{"bad start", pts, func() Options { o := Options{Start: perfmodel.UncalibratedFactors}; o.Start.MoEMemory = 3; return o }()},
		{"unknown model", pts, Options{Model: "no-such-model"}},
	}
	for _, tc := range tests {
		if _, err := Fit(context.Background(), tc.pts, tc.opts); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := LeaveOneOut(context.Background(), pts, Options{}, ByTensorParallel); err == nil {
		t.Error("cross-validation over one TP size accepted")
	}
}
