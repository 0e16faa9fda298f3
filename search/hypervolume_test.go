package search

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHypervolumeHandComputed(t *testing.T) {
	tests := []struct {
		name   string
		points [][]float64
		ref    []float64
		want   float64
	}{
		{"empty", nil, []float64{1, 1}, 0},
		{"1-D", [][]float64{{0.3}, {0.5}}, []float64{1}, 0.7},
		{"single 2-D", [][]float64{{1, 2}}, []float64{3, 3}, 2},
		// Staircase: (1,3),(2,2),(3,1) with ref (4,4): 3·1 + 2·1 + 1·1 strips
		// measured from the ref: (4-1)(4-3) + (4-2)(3-2) + (4-3)(2-1) = 6.
		{"staircase 2-D", [][]float64{{3, 1}, {1, 3}, {2, 2}}, []float64{4, 4}, 6},
		{"dominated point ignored", [][]float64{{1, 1}, {2, 2}}, []float64{3, 3}, 4},
		{"duplicates", [][]float64{{1, 1}, {1, 1}}, []float64{3, 3}, 4},
		{"outside ref ignored", [][]float64{{5, 0}, {1, 1}, {0, 3}}, []float64{3, 3}, 4},
		{"on ref boundary ignored", [][]float64{{3, 0}}, []float64{3, 3}, 0},
		{"single 3-D", [][]float64{{0, 0, 0}}, []float64{1, 2, 3}, 6},
		// Two boxes [0,2]x[0,1]x[0,1] ∪ [0,1]x[0,2]x[0,1] with ref (2,2,1)
		// minus... points (0,1,0) and (1,0,0): union of [0,2]x[1,2]x[0,1]
		// (vol 2) and [1,2]x[0,2]x[0,1] (vol 2) overlapping in
		// [1,2]x[1,2]x[0,1] (vol 1) = 3.
		{"two 3-D", [][]float64{{0, 1, 0}, {1, 0, 0}}, []float64{2, 2, 1}, 3},
		// (1,0,0),(0,1,0),(0,0,1) in the cube with ref (2,2,2): each box has
		// volume 1·2·2 = 4; pairwise overlaps 1·1·2 = 2; triple 1:
		// 3·4 − 3·2 + 1 = 7.
		{"three 3-D", [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, []float64{2, 2, 2}, 7},
		// Same construction in 4-D with ref 2: boxes 8 each, pairs 4, triples 2,
		// quadruple 1: 4·8 − 6·4 + 4·2 − 1 = 15.
		{"four 4-D", [][]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}, []float64{2, 2, 2, 2}, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Hypervolume(tt.points, tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("Hypervolume = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHypervolumeErrors(t *testing.T) {
	if _, err := Hypervolume([][]float64{{1, 2, 3}}, []float64{4, 4}); err == nil {
		t.Error("dimension mismatch accepted")
	}
	if _, err := Hypervolume(nil, nil); err == nil {
		t.Error("empty reference accepted")
	}
	if _, err := Hypervolume([][]float64{{math.NaN(), 1}}, []float64{4, 4}); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := Hypervolume(nil, []float64{math.Inf(1), 1}); err == nil {
		t.Error("infinite reference accepted")
	}
}

// monteCarloHV estimates the hypervolume by sampling the box [lo, ref].
func monteCarloHV(pts [][]float64, lo, ref []float64, n int, r *rand.Rand) float64 {
	d := len(ref)
	box := 1.0
	for k := range ref {
		box *= ref[k] - lo[k]
	}
	hit := 0
	x := make([]float64, d)
	for i := 0; i < n; i++ {
		for k := range x {
			x[k] = lo[k] + r.Float64()*(ref[k]-lo[k])
		}
		for _, p := range pts {
			dom := true
			for k := range p {
				if p[k] > x[k] {
					dom = false
					break
				}
			}
			if dom {
				hit++
				break
			}
		}
	}
	return box * float64(hit) / float64(n)
}

// TestHypervolumeAgainstMonteCarlo cross-checks the exact algorithms with an
// independent estimate on random fronts in 2, 3 and 4 dimensions.
func TestHypervolumeAgainstMonteCarlo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{2, 3, 4} {
		pts := make([][]float64, 25)
		for i := range pts {
			pts[i] = make([]float64, d)
			for k := range pts[i] {
				pts[i][k] = r.Float64()
			}
		}
		ref := make([]float64, d)
		lo := make([]float64, d)
		for k := range ref {
			ref[k] = 1.1
		}
		got, err := Hypervolume(pts, ref)
		if err != nil {
			t.Fatal(err)
		}
		est := monteCarloHV(pts, lo, ref, 200000, r)
		if math.Abs(got-est) > 0.01*math.Max(1, est) {
			t.Errorf("d=%d: exact %v vs Monte Carlo %v", d, got, est)
		}
	}
}

func TestHypervolumeInvariantUnderOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pts := make([][]float64, 30)
	for i := range pts {
		pts[i] = []float64{r.Float64(), r.Float64(), r.Float64()}
	}
	ref := []float64{1, 1, 1}
	a, _ := Hypervolume(pts, ref)
	r.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
	b, _ := Hypervolume(pts, ref)
	if math.Abs(a-b) > 1e-12 {
		t.Fatalf("order changed hypervolume: %v vs %v", a, b)
	}
}

func TestFrontHypervolumeDirections(t *testing.T) {
	// Maximise throughput, minimise latency: (10, 1) and (5, 0.5) with the
	// reference (0 throughput, 2 latency): oriented (-10,1),(-5,0.5), ref (0,2):
	// strips: x=-10: (0+10)(2-1)=10; x=-5: (0+5)(1-0.5)=2.5 → 12.5.
	dirs := []Direction{Maximize, Minimize}
	trials := []Trial{
		{Number: 0, State: StateComplete, Values: []float64{10, 1}},
		{Number: 1, State: StateComplete, Values: []float64{5, 0.5}},
		{Number: 2, State: StateComplete, Values: []float64{4, 1.5}},                            // dominated
		{Number: 3, State: StateComplete, Values: []float64{100, 0}, Constraints: []float64{1}}, // infeasible
		{Number: 4, State: StateFail},
	}
	got, err := FrontHypervolume(trials, dirs, []float64{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if got != 12.5 {
		t.Fatalf("FrontHypervolume = %v, want 12.5", got)
	}
}

func BenchmarkHypervolume3D(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	pts := make([][]float64, 100)
	for i := range pts {
		// Points on the unit sphere octant: all mutually non-dominated.
		x, y, z := r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
		n := math.Sqrt(x*x + y*y + z*z)
		pts[i] = []float64{math.Abs(x) / n, math.Abs(y) / n, math.Abs(z) / n}
	}
	ref := []float64{1.1, 1.1, 1.1}
	for b.Loop() {
		if _, err := Hypervolume(pts, ref); err != nil {
			b.Fatal(err)
		}
	}
}
