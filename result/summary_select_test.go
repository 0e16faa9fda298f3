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
