package capacity

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// seeded passes up to a ceiling that depends on the run's seed index: the
// walk k of a sweep with r repeats runs seed indexes k×r … k×r+r−1.
func seeded(ceilings []int, repeats int, calls map[int][]int) LevelFunc {
	return func(_ context.Context, users, seed int) (Repeat, error) {
		k := seed / repeats
		calls[k] = append(calls[k], users)
		r := Repeat{Pass: users <= ceilings[k], OutputThroughput: float64(users)}
		if !r.Pass {
			r.FailedClause = fmt.Sprintf("seed %d fails at %d", k, users)
		}
		return r, nil
	}
}

func TestSweepSeedsFindEachSeedsCeiling(t *testing.T) {
	ceilings := []int{150, 140, 163, 150, 121}
	for _, repeats := range []int{1, 2} {
		calls := map[int][]int{}
		res, err := Sweep(context.Background(), seeded(ceilings, repeats, calls), SweepOptions{Start: 25, Max: 4000, ResolutionUsers: 1, Repeats: repeats, Seeds: 5})
		if err != nil {
			t.Fatal(err)
		}
		if res.Ceiling != 150 || res.Interval == nil {
			t.Fatalf("repeats %d: ceiling %d, interval %+v (%s)", repeats, res.Ceiling, res.Interval, res.NoInterval)
		}
		for k, sc := range res.Interval.Seeds {
			if sc.Seed != k || sc.Ceiling != ceilings[k] || sc.FirstFailing != ceilings[k]+1 {
				t.Errorf("repeats %d, seed %d: %+v, want ceiling %d", repeats, k, sc, ceilings[k])
			}
			seen := map[int]bool{}
			for _, u := range calls[k] {
				if seen[u] && repeats == 1 {
					t.Errorf("seed %d evaluated %d twice", k, u)
				}
				seen[u] = true
			}
		}
		// the other seeds start from the first seed's ceiling: no grid
		if n := len(calls[1]) / repeats; n > 8 {
			t.Errorf("seed 1 took %d levels from 150 to 140 at resolution 1", n)
		}
	}
}

// The prediction interval by hand: midpoints 150.5, 140.5, 163.5, 150.5,
// 121.5 (gap 1); mean 145.3, sample sd √(974.8/4) = 15.61; t(4) = 2.776,
// × √1.2 → half-width 47.47; lo = ⌊145.3 − 47.47 − 0.5⌋ = 97, hi =
// ⌈145.3 + 47.47 − 0.5⌉ = 193.
func TestPredictionIntervalByHand(t *testing.T) {
	var seeds []SeedCeiling
	for i, c := range []int{150, 140, 163, 150, 121} {
		seeds = append(seeds, SeedCeiling{Seed: i, Ceiling: c, FirstFailing: c + 1})
	}
	iv := predictionInterval(seeds)
	if iv.Lo != 97 || iv.Hi != 193 || math.Abs(iv.MeanUsers-145.3) > 1e-9 || math.Abs(iv.StdDevUsers-15.61) > 0.01 {
		t.Errorf("interval %+v, want [97, 193], mean 145.3, sd 15.61", iv)
	}
	if iv.Method != IntervalMethod || iv.Confidence != 0.95 || !iv.Contains(121) || iv.Contains(194) {
		t.Errorf("interval %+v", iv)
	}
	// identical seeds: the interval is the bracket's lower half, no wider
	same := []SeedCeiling{{0, 156, 159, 0}, {1, 156, 159, 0}, {2, 156, 159, 0}}
	if iv := predictionInterval(same); iv.Lo != 156 || iv.Hi != 156 {
		t.Errorf("three equal seeds: [%d, %d], want [156, 156]", iv.Lo, iv.Hi)
	}
}

func TestNoIntervalSaysWhy(t *testing.T) {
	calls := map[int][]int{}
	for _, tc := range []struct {
		ceilings []int
		seeds    int
		want     string
	}{
		{[]int{150}, 1, "one workload seed"},
		{[]int{0, 0}, 2, "no user count met the SLA"},
		{[]int{5000, 5000}, 2, "every user count up to sweep.max"},
		{[]int{150, 5000}, 2, "seed 1 met the SLA up to sweep.max"},
	} {
		res, err := Sweep(context.Background(), seeded(tc.ceilings, 1, calls), SweepOptions{Start: 25, Max: 400, ResolutionUsers: 1, Seeds: tc.seeds})
		if err != nil {
			t.Fatal(err)
		}
		if res.Interval != nil || len(res.NoInterval) < len(tc.want) || res.NoInterval[:len(tc.want)] != tc.want {
			t.Errorf("ceilings %v: interval %+v, no_interval %q; want %q", tc.ceilings, res.Interval, res.NoInterval, tc.want)
		}
	}
}

// Paired difference by hand, seed 0 (which chose) left out: seed 0
// favours the tuned flags by +20; on seeds 1-3 the midpoints are default
// 140.5, 160.5, 150.5, tuned 141.5, 165.5, 153.5; differences 1, 5, 3:
// mean 3, sd 2, t(2) = 4.303 → half-width 4.303 × 2 / √3 = 4.969.
func TestPairedDifferenceByHand(t *testing.T) {
	mk := func(cs ...int) *Interval {
		iv := &Interval{}
		for i, c := range cs {
			iv.Seeds = append(iv.Seeds, SeedCeiling{Seed: i, Ceiling: c, FirstFailing: c + 1})
		}
		return iv
	}
	d, err := PairedDifference(mk(150, 140, 160, 150), mk(170, 141, 165, 153))
	if err != nil {
		t.Fatal(err)
	}
	if d.Users != 20 || d.MeanUsers != 3 || d.Seeds != 3 || math.Abs(d.Lo-(3-4.969)) > 1e-3 || math.Abs(d.Hi-(3+4.969)) > 1e-3 || !d.WithinNoise() {
		t.Errorf("difference %+v, want +20 on seed 0 and 3 ± 4.969 over the 3 other seeds, within noise", d)
	}
	d, _ = PairedDifference(mk(150, 140, 160, 150), mk(160, 150, 171, 160))
	if d.WithinNoise() {
		t.Errorf("a consistent +10 over every seed is no noise: %+v", d)
	}
	if _, err := PairedDifference(mk(150, 140, 150), mk(150, 140, 160, 150)); err == nil {
		t.Error("different seed counts: no error")
	}
}
