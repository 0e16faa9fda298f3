package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Precision is how far a sweep refines its estimate of the capacity
// (sweep.precision, docs/capacity.md "Precision"): after the walk has
// bracketed the knee, runs on fresh workload seeds are spent around the
// estimate until its confidence interval is as narrow as Target asks, or
// MaxRuns is spent.
type Precision struct {
	// Target is the confidence interval's half-width as a share of the
	// estimate (0.10: ±10 %); 0 turns the refinement off (the walk's
	// ceiling and, with Seeds > 1, its seed interval, as before).
	Target float64
	// MinRuns fresh-seed runs are made whatever the precision (a few runs
	// can look precise by chance); MaxRuns bounds them (the engine-time
	// budget of the refinement).
	MinRuns, MaxRuns int
	// Confidence of the interval (0: DefaultConfidence).
	Confidence float64
}

// Refinement defaults: documented in docs/capacity.md.
const (
	DefaultPrecisionTarget = 0.10
	DefaultMinRuns         = 6
	DefaultMaxRuns         = 30
)

// Refinement is what the refinement spent and reached.
type Refinement struct {
	// Target is the precision asked for; Reached whether the estimate's
	// interval met it.
	Target  float64 `json:"target"`
	Reached bool    `json:"reached"`
	// Runs counts the fresh-seed runs made; Stopped says why it stopped.
	Runs    int    `json:"runs"`
	Stopped string `json:"stopped"`
	// NotCounted says which of those runs the estimate could not use and
	// why ("1 still settling"; empty when it used them all).
	NotCounted string `json:"not_counted,omitempty"`
}

// The refinement's design: runs designLogit logit units of the binding
// clause's fitted share either side of the crossing (a share of 5 % at
// the crossing is 1.7 % and 14 % there), at most maxDesignShare of the
// estimate away, where the logit is still close to linear on the
// reference case (docs/capacity.md, "Precision").
const (
	designLogit    = 1.0
	maxDesignShare = 0.2
)

// minLevels is how many distinct user counts the runs must cover before
// the precision target counts as reached.
const minLevels = 3

// Why a refinement stopped.
const (
	StoppedPrecision = "precision reached"
	StoppedMaxRuns   = "sweep.max_runs spent"
	StoppedNoBracket = "no bracket to refine"
)

// designLevel is the user count of refinement run j around center: the
// runs alternate below and above the estimate, delta away. The crossing's
// variance at the centre does not depend on delta, but the slope's does,
// and an interval is bounded only once the slope is told from 0
// (Fieller): so delta is as wide as the fitted logit stays linear over
// (designLogit either side of the crossing).
func designLevel(j int, center, delta float64, maxUsers int) int {
	offsets := [...]float64{-1, 1}
	u := int(math.Round(center + offsets[j%len(offsets)]*delta))
	if maxUsers > 0 {
		u = min(u, maxUsers)
	}
	return max(u, 1)
}

// refine spends runs on fresh seeds around res's bracket until the
// capacity estimate's interval meets o.Precision.Target or MaxRuns is
// spent, and sets res.Estimate, res.Refinement and res.Runs. Runs of the
// walk itself (seed indexes below o.Repeats) only place the bracket: the
// walk's seed chose the configuration in a plan, and its runs would lend
// the estimate the luck of that choice.
func refine(ctx context.Context, eval LevelFunc, o SweepOptions, res *SweepResult) error {
	p := o.Precision
	minRuns, maxRuns := p.MinRuns, p.MaxRuns
	if minRuns < 3 {
		minRuns = DefaultMinRuns
	}
	if maxRuns <= 0 {
		maxRuns = DefaultMaxRuns
	}
	maxRuns = max(maxRuns, minRuns)
	ref := &Refinement{Target: p.Target}
	res.Refinement = ref
	defer func() { ref.NotCounted = notCounted(res.Runs[len(res.Runs)-ref.Runs:]) }()
	switch {
	case res.bracketLo() == 0 && res.FirstFailing == 0:
		ref.Stopped = StoppedNoBracket
		res.NoEstimate = "the walk measured no user count"
		return nil
	case res.FirstFailing == 0:
		ref.Stopped = StoppedNoBracket
		res.NoEstimate = fmt.Sprintf("every user count up to sweep.max (%d) met the SLA", o.Max)
		return nil
	}
	lo := max(res.bracketLo(), 1)
	center := float64(lo+res.FirstFailing) / 2
	delta := 2 * float64(o.resolution(lo))
	if pr := o.Prior; pr != nil && pr.Users > 0 && len(pr.Clauses) > 0 {
		// the prior places the design: inside the walk's bracket widened
		// by a step, where the walk found the knee
		step := float64(o.resolution(lo))
		center = math.Min(math.Max(pr.Users, float64(lo)-step), float64(res.FirstFailing)+step)
		if b := pr.Clauses[0].Slope; b > 0 {
			delta = math.Max(math.Min(designLogit/b, maxDesignShare*center), step)
		}
	}
	var noCrossing error // the last fit's reason for no estimate
	for j := 0; j < maxRuns; j++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		users := designLevel(j, center, delta, o.Max)
		seed := o.Repeats + j
		rep, err := eval(ctx, users, seed)
		if err != nil {
			return fmt.Errorf("refinement run %d at %d users: %w", j+1, users, err)
		}
		k := KneeRun{Users: users, Seed: seed, Pass: rep.Pass, Margin: InfFloat(math.Inf(1)), Excluded: ExcludedNoSamples}
		if rep.Knee != nil {
			k = *rep.Knee
		}
		res.Runs = append(res.Runs, k)
		ref.Runs++
		if counted(res.Runs) < minRuns {
			if o.RunProgress != nil {
				o.RunProgress(k, nil)
			}
			continue
		}
		est, err := EstimateCapacity(res.Runs, p.Confidence)
		if o.RunProgress != nil {
			o.RunProgress(k, est)
		}
		if errors.Is(err, ErrNoCrossing) {
			noCrossing = err
			// widen the design until the runs straddle the crossing
			delta = math.Min(2*delta, center/2)
			continue
		}
		if err != nil {
			return err
		}
		res.Estimate = est
		center = math.Min(math.Max(est.Users, float64(lo)/2), float64(res.FirstFailing)*2)
		if b := est.Clauses[0].Slope; b > 0 {
			delta = designLogit / b
		}
		// not coarser than the fitted slope asks: on a knee steeper than
		// sweep.resolution_fraction, runs a resolution step either side
		// all pass and all fail and place nothing between them
		delta = math.Max(math.Min(delta, maxDesignShare*center), float64(max(o.ResolutionUsers, 1)))
		// two user counts place a crossing without checking that the
		// logit is straight between them: with a steep knee (all under
		// the limit at one, all over at the other) the interval then
		// looks far narrower than it is (seen live: ±1.2 % from 80 and
		// 120 users, where a repeat said 86 ± 6.8 %), so the target is
		// reached only with runs at three counts or more
		if est.Bounded && float64(est.Precision) <= p.Target && est.Levels >= minLevels {
			ref.Reached, ref.Stopped = true, StoppedPrecision
			return nil
		}
	}
	ref.Stopped = StoppedMaxRuns
	if res.Estimate == nil {
		res.NoEstimate = noEstimateReason(res.Runs, ref.Runs, noCrossing)
	}
	return nil
}

// noEstimateReason says why runs runs on fresh seeds gave no estimate —
// the last fit's reason, fit, when the estimator ran — naming the runs it
// could not use and why (a client that
// could not keep the schedule is the usual one on a small machine).
func noEstimateReason(all []KneeRun, runs int, fit error) string {
	s := fmt.Sprintf("%d runs on fresh seeds did not bracket the capacity", runs)
	if runs == 1 {
		s = "1 run on a fresh seed did not bracket the capacity"
	}
	if fit != nil {
		s = strings.TrimPrefix(fit.Error(), ErrNoCrossing.Error()+": ")
		s = fmt.Sprintf("%d runs on fresh seeds: %s", runs, s)
	}
	if nc := notCounted(all[len(all)-runs:]); nc != "" {
		s += "; not counted: " + nc
	}
	return s
}

// notCounted counts the runs the estimator leaves out, by reason in the
// order they first occur: "2 client-bound, 1 still settling" ("" for none).
func notCounted(runs []KneeRun) string {
	var reasons []string
	n := map[string]int{}
	for _, r := range runs {
		if r.Excluded != "" {
			if n[r.Excluded] == 0 {
				reasons = append(reasons, r.Excluded)
			}
			n[r.Excluded]++
		}
	}
	for i, e := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", n[e], e)
	}
	return strings.Join(reasons, ", ")
}

// counted is how many runs the estimator uses (not excluded).
func counted(runs []KneeRun) int {
	n := 0
	for _, r := range runs {
		if r.Excluded == "" {
			n++
		}
	}
	return n
}
