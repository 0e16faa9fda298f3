package workload

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func ptr(v float64) *float64 { return &v }

func TestDistSampling(t *testing.T) {
	tests := []struct {
		name       string
		spec       DistSpec
		wantMedian float64
		wantMean   float64 // 0: not checked
		lo, hi     float64
	}{
		{"constant", Constant(7), 7, 7, 7, 7},
		{"uniform", DistSpec{Kind: DistUniform, Low: 10, High: 20}, 15, 15, 10, 20},
		{"normal truncated", DistSpec{Kind: DistNormal, Mean: 100, Stddev: 10, Min: ptr(90), Max: ptr(130)}, 102.0, 0, 90, 130},
		{"lognormal sigma", Lognormal(5000, 0.25), 5000, 0, 0, math.Inf(1)},
		{"lognormal p90", DistSpec{Kind: DistLognormal, Median: 1000, P90: 2000}, 1000, 0, 0, math.Inf(1)},
		{"lognormal clipped", Lognormal(1200, 0.8).Clip(50, 16000), 1200, 0, 50, 16000},
		{"exponential", DistSpec{Kind: DistExponential, Mean: 30}, 30 * math.Ln2, 30, 0, math.Inf(1)},
		{"empirical values", DistSpec{Kind: DistEmpirical, Values: []float64{1, 2, 3}, Weights: []float64{1, 0, 3}}, 3, 2.5, 1, 3},
		{"empirical histogram", DistSpec{Kind: DistEmpirical, Values: []float64{0, 10, 20}, Weights: []float64{1, 1}}, 10, 10, 0, 20},
	}
	for _, tt := range tests {
		d, err := NewDist(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		const n = 20000
		xs := make([]float64, n)
		sum := 0.0
		for i := range xs {
			xs[i] = d.Sample(r)
			sum += xs[i]
			if xs[i] < tt.lo || xs[i] > tt.hi {
				t.Fatalf("%s: sample %v outside [%v, %v]", tt.name, xs[i], tt.lo, tt.hi)
			}
		}
		sort.Float64s(xs)
		if med := xs[n/2]; math.Abs(med-tt.wantMedian) > 0.03*math.Max(1, tt.wantMedian) {
			t.Errorf("%s: median %v, want %v", tt.name, med, tt.wantMedian)
		}
		if tt.wantMean != 0 {
			if mean := sum / n; math.Abs(mean-tt.wantMean) > 0.03*tt.wantMean {
				t.Errorf("%s: mean %v, want %v", tt.name, mean, tt.wantMean)
			}
		}
		if tt.name == "lognormal p90" {
			if p90 := xs[n*9/10]; math.Abs(p90-2000) > 60 {
				t.Errorf("lognormal p90: sample p90 %v, want 2000", p90)
			}
		}
		if tt.name == "empirical values" {
			for _, x := range xs {
				if x == 2 {
					t.Fatal("empirical value with weight 0 was drawn")
				}
			}
		}
	}
}

func TestNewDistErrors(t *testing.T) {
	bad := []DistSpec{
		{Kind: "zipf"},
		{Kind: DistUniform, Low: 5, High: 1},
		{Kind: DistLognormal, Median: 0, Sigma: 1},
		{Kind: DistLognormal, Median: 10, P90: 5},
		{Kind: DistExponential},
		{Kind: DistEmpirical},
		{Kind: DistEmpirical, Values: []float64{1, 2}, Weights: []float64{0, 0}},
		{Kind: DistEmpirical, Values: []float64{1, 2, 3}, Weights: []float64{1, 1, 1, 1}},
		Constant(1).Clip(5, 2),
	}
	for _, spec := range bad {
		if _, err := NewDist(spec); err == nil {
			t.Errorf("NewDist(%+v) accepted", spec)
		}
	}
}
