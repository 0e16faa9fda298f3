package calibrate

import (
	"context"
	"math"
	"testing"
)

func TestNelderMeadFindsTheMinimum(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(x []float64) float64
		want []float64
	}{
		{"bowl", func(x []float64) float64 { return (x[0]-0.3)*(x[0]-0.3) + 4*(x[1]+0.2)*(x[1]+0.2) }, []float64{0.3, -0.2}},
		{"rosenbrock", func(x []float64) float64 {
			return 100*(x[1]-x[0]*x[0])*(x[1]-x[0]*x[0]) + (1-x[0])*(1-x[0])
		}, []float64{1, 1}},
		{"kink", func(x []float64) float64 { return math.Abs(x[0]-1) + math.Abs(x[1]) }, []float64{1, 0}},
	} {
		x, _, _, err := NelderMead(context.Background(), tc.f, []float64{0, 0}, 0.3, 1e-12, 2000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if math.Abs(x[i]-tc.want[i]) > 1e-2 {
				t.Errorf("%s: got %v, want %v", tc.name, x, tc.want)
				break
			}
		}
	}
}

func TestNelderMeadStopsAtTheBound(t *testing.T) {
	n := 0
	_, _, _, err := NelderMead(context.Background(), func(x []float64) float64 { n++; return x[0] * x[0] }, []float64{5}, 0.1, 0, 25)
	if err != nil {
		t.Fatal(err)
	}
	// the last step may evaluate a few points past the bound (a shrink)
	if n > 25+2 {
		t.Errorf("%d evaluations, bound 25", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := NelderMead(ctx, func(x []float64) float64 { return x[0] }, []float64{0}, 1, 0, 100); err == nil {
		t.Error("a cancelled context did not stop the search")
	}
}
