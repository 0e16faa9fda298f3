package result

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// nthSmallest agrees with sorting on random, constant, sorted, reversed
// and few-valued inputs, at every rank.
func TestNthSmallestIsTheSortedRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i, n int) int64{
		"random":    func(int, int) int64 { return rng.Int64N(1e6) },
		"constant":  func(int, int) int64 { return 7 },
		"sorted":    func(i, _ int) int64 { return int64(i) },
		"reversed":  func(i, n int) int64 { return int64(n - i) },
		"two-value": func(int, int) int64 { return rng.Int64N(2) },
	}
	for name, gen := range shapes {
		for _, n := range []int{1, 2, 3, 5, 16, 17, 100, 513} {
			x := make([]int64, n)
			for i := range x {
				x[i] = gen(i, n)
			}
			want := slices.Clone(x)
			slices.Sort(want)
			for k := range n {
				y := slices.Clone(x)
				if got := nthSmallest(y, k); got != want[k] {
					t.Fatalf("%s n=%d k=%d: %d, sorted %d", name, n, k, got, want[k])
				}
			}
		}
	}
}

// leastOfLargest agrees with sorting on the same inputs, for every count
// of largest values it keeps.
func TestLeastOfLargestIsTheSortedRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := map[string]func(i, n int) int64{
		"random":    func(int, int) int64 { return rng.Int64N(1e6) },
		"constant":  func(int, int) int64 { return 7 },
		"sorted":    func(i, _ int) int64 { return int64(i) },
		"reversed":  func(i, n int) int64 { return int64(n - i) },
		"two-value": func(int, int) int64 { return rng.Int64N(2) },
	}
	for name, gen := range shapes {
		for _, n := range []int{1, 2, 3, 5, 16, 17, 100, 513} {
			x := make([]int64, n)
			for i := range x {
				x[i] = gen(i, n)
			}
			want := slices.Clone(x)
			slices.Sort(want)
			for m := 1; m <= min(n, maxTopSelect); m++ {
				before := slices.Clone(x)
				if got := leastOfLargest(nil, x, m); got != want[n-m] {
					t.Fatalf("%s n=%d m=%d: %d, sorted %d", name, n, m, got, want[n-m])
				}
				if !slices.Equal(x, before) {
					t.Fatalf("%s n=%d m=%d: the gaps were reordered", name, n, m)
				}
			}
		}
	}
}

// BenchmarkRequestITL judges the p95 of a request's gaps that grow over
// its life, as a decode's steps do, with a few prefill spikes.
func BenchmarkRequestITL(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	r := &Record{TokenGapsUS: make([]int64, 600)}
	for i := range r.TokenGapsUS {
		r.TokenGapsUS[i] = 20000 + int64(i)*15 + rng.Int64N(200)
		if rng.IntN(30) == 0 {
			r.TokenGapsUS[i] += 150000
		}
	}
	s := NewSummary(DefaultSLA(), Window{})
	for b.Loop() {
		s.requestITL(r, 95)
	}
}
