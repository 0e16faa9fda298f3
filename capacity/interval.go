package capacity

import (
	"context"
	"fmt"
	"math"
)

// IntervalMethod names how Interval is computed, for the summary.
const IntervalMethod = "seed-prediction-t95"

// Interval is where the ceiling of a sweep with another workload seed
// falls: a 95 % prediction interval over the ceilings that Seeds sweeps,
// each with its own workload seed, found. Seed 0 is the sweep itself (the
// configured workload.seed); every other seed starts from its ceiling,
// walks up or down by the resolution, doubling the step, until it brackets
// its own ceiling, and bisects that bracket to the sweep's resolution.
//
// Each seed's ceiling c and first failing count f bracket its threshold,
// estimated as the midpoint m = (c+f)/2. Over n seeds with mean m̄ and
// standard deviation s, another seed's midpoint lies in m̄ ± t(n−1) ×
// s × √(1 + 1/n) with 95 % probability when midpoints are normal (the
// Student-t prediction interval, which accounts for s being estimated
// from few seeds); its ceiling lies half a bracket (ḡ/2, the mean f−c)
// below its midpoint. Lo and Hi are that range rounded outwards.
type Interval struct {
	Lo int `json:"lo"`
	Hi int `json:"hi"`
	// Method is IntervalMethod; Confidence the prediction probability.
	Method     string  `json:"method"`
	Confidence float64 `json:"confidence"`
	// Seeds are the per-seed ceilings, the sweep's own first.
	Seeds []SeedCeiling `json:"seeds"`
	// MeanUsers and StdDevUsers are the mean and standard deviation of the
	// seeds' midpoints (c+f)/2.
	MeanUsers   float64 `json:"mean_users"`
	StdDevUsers float64 `json:"stddev_users"`
}

// SeedCeiling is the ceiling one workload seed's walk found.
type SeedCeiling struct {
	// Seed is the walk's index: its runs used workload.seed +
	// Seed×repeats + r.
	Seed         int `json:"seed"`
	Ceiling      int `json:"users"`
	FirstFailing int `json:"first_failing_users"`
	// Runs is the number of levels the walk evaluated.
	Runs int `json:"runs"`
}

// Width is Hi − Lo.
func (iv *Interval) Width() int { return iv.Hi - iv.Lo }

// Contains reports whether users lies in [Lo, Hi].
func (iv *Interval) Contains(users int) bool { return users >= iv.Lo && users <= iv.Hi }

// AddInterval measures the ceilings of seeds 1 … o.Seeds−1 around res's
// ceiling with eval and sets res.Interval, or res.NoInterval when res has
// no bracket to start from. res must come from a sweep with the same eval
// and options (its levels are seed 0's).
func AddInterval(ctx context.Context, eval LevelFunc, o SweepOptions, res *SweepResult) error {
	if o.Repeats < 1 {
		o.Repeats = 1
	}
	switch {
	case o.Seeds < 2:
		res.NoInterval = "one workload seed (sweep.seeds: 1)"
		return nil
	case res.bracketLo() == 0:
		res.NoInterval = "no user count met the SLA"
		return nil
	case res.FirstFailing == 0:
		res.NoInterval = fmt.Sprintf("every user count up to sweep.max (%d) met the SLA", o.Max)
		return nil
	}
	seeds := []SeedCeiling{{Seed: 0, Ceiling: res.bracketLo(), FirstFailing: res.FirstFailing, Runs: len(res.Levels)}}
	for k := 1; k < o.Seeds; k++ {
		sc, err := seedCeiling(ctx, eval, o, k, res.bracketLo())
		if err != nil {
			return fmt.Errorf("ceiling interval, seed %d: %w", k, err)
		}
		if sc.FirstFailing == 0 {
			res.NoInterval = fmt.Sprintf("seed %d met the SLA up to sweep.max (%d)", k, o.Max)
			return nil
		}
		if o.SeedProgress != nil {
			o.SeedProgress(sc)
		}
		seeds = append(seeds, sc)
	}
	res.Interval = predictionInterval(seeds)
	return nil
}

// seedCeiling walks seed k from start: up by the resolution while levels
// pass, down while they fail, the step doubling each time, then bisects
// the bracket to the resolution.
func seedCeiling(ctx context.Context, eval LevelFunc, o SweepOptions, k, start int) (SeedCeiling, error) {
	w := &walker{ctx: ctx, eval: eval, o: o, seed: k, done: map[int]*Level{}}
	up, err := w.step(start, "seed")
	if err != nil {
		return SeedCeiling{}, err
	}
	d := o.resolution(start)
	for {
		var u int
		if up {
			if w.lo >= o.Max {
				break
			}
			u = min(w.lo+d, o.Max)
		} else {
			if w.hi <= 1 {
				break
			}
			u = max(w.hi-d, 1)
		}
		moved, err := w.step(u, "seed")
		if err != nil {
			return SeedCeiling{}, err
		}
		if moved != up {
			break
		}
		d *= 2
	}
	if err := w.bisect(); err != nil {
		return SeedCeiling{}, err
	}
	sc := SeedCeiling{Seed: k, Ceiling: w.lo, Runs: len(w.done)}
	if w.failing != nil {
		sc.FirstFailing = w.hi
	}
	return sc, nil
}

// predictionInterval is the 95 % Student-t prediction interval of another
// seed's ceiling from seeds (each with a first failing count).
func predictionInterval(seeds []SeedCeiling) *Interval {
	n := float64(len(seeds))
	var sum, gaps float64
	for _, s := range seeds {
		sum += float64(s.Ceiling+s.FirstFailing) / 2
		gaps += float64(s.FirstFailing - s.Ceiling)
	}
	mean, gap := sum/n, gaps/n
	var ss float64
	for _, s := range seeds {
		d := float64(s.Ceiling+s.FirstFailing)/2 - mean
		ss += d * d
	}
	sd := math.Sqrt(ss / (n - 1))
	h := studentT975(len(seeds)-1) * sd * math.Sqrt(1+1/n)
	lo := int(math.Floor(mean - h - gap/2 + 1e-9))
	hi := int(math.Ceil(mean + h - gap/2 - 1e-9))
	return &Interval{Lo: max(lo, 0), Hi: max(hi, lo, 0), Method: IntervalMethod, Confidence: 0.95,
		Seeds: seeds, MeanUsers: mean, StdDevUsers: sd}
}

// studentT975 is the 97.5th percentile of Student's t with df degrees of
// freedom (two-sided 95 %), from the standard tables; above 30 it
// approaches the normal 1.96.
func studentT975(df int) float64 {
	table := [...]float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df < len(table):
		return table[df]
	case df < 60:
		return 2.000
	case df < 120:
		return 1.980
	}
	return 1.960
}

// DifferenceMethod names how Difference is computed, for the summary.
const DifferenceMethod = "paired-seeds-t95"

// Difference compares two configurations' ceilings measured on the same
// workload seeds: per seed other than the choosing seed 0, the difference
// of their midpoints (c+f)/2, paired because a seed whose users are
// heavier lowers both; MeanUsers is its mean and [Lo, Hi] the 95 %
// Student-t confidence interval of that mean; Seeds counts the pairs.
// Users is the difference of the two sweeps' own ceilings (seed 0).
//
// EstimateDifference fills the same fields from two capacity estimates
// (Seeds 0: not paired).
type Difference struct {
	Users     int     `json:"users"`
	MeanUsers float64 `json:"mean_users"`
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Method    string  `json:"method"`
	Seeds     int     `json:"seeds,omitempty"`
}

// WithinNoise reports whether the interval contains no difference at all.
func (d *Difference) WithinNoise() bool { return d.Lo <= 0 && d.Hi >= 0 }

// PairedDifference is b − a over their common seeds other than seed 0:
// seed 0 is the walk the study, the candidate sweeps and the choice ran on,
// so the chosen configuration's lead there carries the luck of the choice
// (the 20-seed table of docs/capacity.md: +6 users on the choosing seed,
// −1.6 on average). Users is still seed 0's difference, for the record.
// An error when they were not measured on the same seeds or on fewer
// than three (two pairs).
func PairedDifference(a, b *Interval) (*Difference, error) {
	if a == nil || b == nil || len(a.Seeds) != len(b.Seeds) || len(a.Seeds) < 3 {
		return nil, fmt.Errorf("ceiling difference: needs two intervals over the same seeds (at least 3: seed 0, which chose, is left out)")
	}
	n := len(a.Seeds) - 1
	ds := make([]float64, n)
	var sum float64
	for i := 1; i < len(a.Seeds); i++ {
		if a.Seeds[i].Seed != b.Seeds[i].Seed {
			return nil, fmt.Errorf("ceiling difference: seed %d against seed %d", a.Seeds[i].Seed, b.Seeds[i].Seed)
		}
		mid := func(s SeedCeiling) float64 { return float64(s.Ceiling+s.FirstFailing) / 2 }
		ds[i-1] = mid(b.Seeds[i]) - mid(a.Seeds[i])
		sum += ds[i-1]
	}
	mean := sum / float64(n)
	var ss float64
	for _, d := range ds {
		ss += (d - mean) * (d - mean)
	}
	h := studentT975(n-1) * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	return &Difference{Users: b.Seeds[0].Ceiling - a.Seeds[0].Ceiling, MeanUsers: mean, Lo: mean - h, Hi: mean + h,
		Method: DifferenceMethod, Seeds: n}, nil
}
