package capacity

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// Level is the outcome of every repeat at one user count.
type Level struct {
	Users   int      `json:"users"`
	Pass    bool     `json:"pass"`
	Repeats []Repeat `json:"repeats"`
	// Insufficient is set when no repeat failed but one had too few
	// samples for a percentile of the SLA (result.VerdictInsufficient):
	// the level is neither a pass nor a fail and never the ceiling.
	// FewSamplesPass says whether its measured values met the SLA all the
	// same: the sweep then walks on upwards (few users give few samples),
	// else it bisects below (an overloaded level completes few requests).
	Insufficient   bool `json:"insufficient_samples,omitempty"`
	FewSamplesPass bool `json:"few_samples_pass,omitempty"`
	// FailedClause is the first SLA clause that failed in a failing repeat.
	FailedClause string `json:"failed_clause,omitempty"`
}

// Repeat is one run at a user count, reduced to what the sweep needs.
type Repeat struct {
	Pass bool `json:"pass"`
	// Insufficient: the run had too few samples to judge a clause, and
	// none failed; FewSamplesPass, whether its measured values met the
	// SLA all the same.
	Insufficient     bool    `json:"insufficient_samples,omitempty"`
	FewSamplesPass   bool    `json:"few_samples_pass,omitempty"`
	FailedClause     string  `json:"failed_clause,omitempty"`
	OutputThroughput float64 `json:"output_throughput"` // tokens/s
	TTFTP95          float64 `json:"ttft_p95_s"`
	ITLP95           float64 `json:"itl_p95_s"`
	// Detail is whatever the evaluator wants kept with the level (a summary,
	// telemetry); the sweep never reads it.
	Detail any `json:"detail,omitempty"`
	// Knee is the run as the capacity estimator reads it (nil when the
	// evaluator does not say).
	Knee *KneeRun `json:"-"`
}

// up reports whether the sweep walks on above l: it passed, or it had too
// few samples to judge but its measured values met the SLA.
func (l *Level) up() bool { return l.Pass || (l.Insufficient && l.FewSamplesPass) }

// LevelFunc runs one repeat at users concurrent users. repeat is the
// run's seed index: every run of a sweep has its own, and an evaluator
// runs it with workload.seed + repeat (Load.SeedOffset), so no two runs of
// a sweep replay the same users. Repeat r of level walk k (0: the sweep
// itself, k ≥ 1: the seeds of the interval) has index k×Repeats + r.
type LevelFunc func(ctx context.Context, users, repeat int) (Repeat, error)

// SweepOptions bound a sweep. Grid, when set, replaces the doubling grid.
type SweepOptions struct {
	Grid               []int
	Start, Max         int
	ResolutionUsers    int
	ResolutionFraction float64
	Repeats            int
	// Seeds is how many workload seeds the ceiling is measured with: the
	// sweep walks the grid with the first, and each other seed finds its
	// own ceiling by a walk from the first one's (Interval). 0 or 1
	// measures no interval.
	Seeds int
	// Progress, when set, is called after every level of the first seed's
	// walk.
	Progress func(l Level, phase string)
	// SeedProgress, when set, is called with each other seed's ceiling.
	SeedProgress func(s SeedCeiling)
	// Precision, when its Target is set, refines the capacity estimate
	// on fresh seeds after the walk (refine.go) instead of walking
	// Seeds−1 more seeds; RunProgress is called after each of its runs
	// with the estimate so far (nil before there is one).
	Precision   Precision
	RunProgress func(k KneeRun, est *CapacityEstimate)
	// Prior, when set, is an estimate of the same capacity from
	// elsewhere (a multi plan's calibrated simulator): the refinement's
	// first runs go either side of it, as far apart as its slope says,
	// instead of around the middle of the walk's bracket. The estimate
	// itself uses only this sweep's runs.
	Prior *CapacityEstimate
	// Known are levels measured before the sweep with the same
	// configuration and windows (a multi-fidelity plan's verified
	// points): their repeat 0 of the first seed is taken from here
	// instead of run again.
	Known map[int]Repeat
}

// SweepResult is the capacity ceiling with its evidence.
type SweepResult struct {
	// Ceiling is the largest user count judged to meet the SLA (0: none
	// was). A level with too few samples to judge a clause never decides
	// it: when the walk went higher on such levels (their measured values
	// were within the SLA), Unconfirmed is set and UnconfirmedUsers is the
	// largest of them — the ceiling may be that high, but nothing judged
	// says so (issue 30, item 8).
	Ceiling          int  `json:"users"`
	Unconfirmed      bool `json:"unconfirmed,omitempty"`
	UnconfirmedUsers int  `json:"unconfirmed_users,omitempty"`
	// FirstFailing is the smallest failing count above the ceiling (0: none
	// failed up to Max).
	FirstFailing int `json:"first_failing_users"`
	// FailedClause is the SLA clause that failed first at FirstFailing.
	FailedClause string `json:"failed_clause"`
	// Resolution is the bisection resolution at the ceiling.
	Resolution int     `json:"resolution_users"`
	Levels     []Level `json:"levels"`
	// Knee is the user count where throughput stops growing in proportion
	// to users (Kneedle on the measured curve); 0 when too few levels.
	Knee int `json:"knee_users"`
	// Spread is the largest relative spread of output throughput between
	// repeats of one level (0 with one repeat).
	Spread float64 `json:"throughput_spread"`
	// Interval is the ceiling's interval over workload seeds (nil with one
	// seed, or when the first walk found no bracket to start from:
	// NoInterval says why).
	Interval   *Interval `json:"interval,omitempty"`
	NoInterval string    `json:"no_interval,omitempty"`
	// Estimate is the capacity estimated from the refinement's runs
	// (Runs), with its confidence interval and the spread over seeds;
	// nil when the refinement was off or could not estimate it
	// (NoEstimate says why). Refinement says what it spent and reached.
	Estimate   *CapacityEstimate `json:"estimate,omitempty"`
	NoEstimate string            `json:"no_estimate,omitempty"`
	Refinement *Refinement       `json:"refinement,omitempty"`
	Runs       []KneeRun         `json:"runs,omitempty"`
	// RunCost is what the walk and its refinement (or seed walks) ran.
	RunCost
	// Margin is the binding clause's distance from its limit at the
	// ceiling and at the first failing count (set by SweepConfig, which
	// sees the runs' summaries; nil when they were not kept).
	Margin *Margin `json:"margin,omitempty"`
}

// bracketLo is the lower end of the walk's bracket: the largest count it
// went up from, judged (Ceiling) or not (UnconfirmedUsers). The seed
// walks and the refinement start from the bracket, whose unjudged lower
// end still says where the knee is.
func (r *SweepResult) bracketLo() int { return max(r.Ceiling, r.UnconfirmedUsers) }

// AimUsers is the user count a later run should aim at when it needs the
// knee's place, not a judged capacity: the bracket's lower end (the judged
// ceiling, or the largest count that met the SLA on too few samples to be
// judged when that is higher), at least 1. A short window on a slow
// deployment can leave every count below the first failure unjudged
// (Ceiling 0): aiming at 1 user there measures nothing a fit or a study
// can use.
func (r *SweepResult) AimUsers() int { return max(r.bracketLo(), 1) }

// Resolution is the bisection stopping distance at a passing count.
func (o SweepOptions) resolution(pass int) int {
	r := int(math.Ceil(o.ResolutionFraction * float64(pass)))
	return max(r, o.ResolutionUsers, 1)
}

// walker runs the levels of one seed's walk, each count at most once.
type walker struct {
	ctx  context.Context
	eval LevelFunc
	o    SweepOptions
	// seed is the walk's index: its repeats run with seed indexes
	// seed×Repeats + r.
	seed int
	done map[int]*Level
	// lo is the largest count below the first failure the walk has passed
	// (an insufficient level counts as passed for the walk's direction:
	// more users give more samples); ceiling is the largest judged pass;
	// hi and failing the smallest failing count found above lo.
	lo, hi, ceiling int
	failing         *Level
}

func (w *walker) run(users int, phase string) (*Level, error) {
	if l, ok := w.done[users]; ok {
		return l, nil
	}
	o := w.o
	l := &Level{Users: users, Pass: true}
	for r := 0; r < o.Repeats; r++ {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		rep, known := o.Known[users]
		var err error
		if !known || r > 0 || w.seed > 0 {
			rep, err = w.eval(w.ctx, users, w.seed*o.Repeats+r)
		}
		if err != nil {
			return nil, fmt.Errorf("sweep at %d users (repeat %d): %w", users, r+1, err)
		}
		l.Repeats = append(l.Repeats, rep)
		judgedFail := l.FailedClause != "" && !l.Insufficient
		switch {
		case judgedFail:
		case !rep.Pass && !rep.Insufficient:
			l.Pass, l.Insufficient, l.FewSamplesPass, l.FailedClause = false, false, false, rep.FailedClause
		case rep.Insufficient:
			if l.Pass {
				l.FewSamplesPass = true
			}
			l.Pass, l.Insufficient = false, true
			l.FewSamplesPass = l.FewSamplesPass && rep.FewSamplesPass
			if !rep.FewSamplesPass && l.FailedClause == "" {
				l.FailedClause = rep.FailedClause
			}
		}
	}
	w.done[users] = l
	if o.Progress != nil && w.seed == 0 {
		o.Progress(*l, phase)
	}
	return l, nil
}

// step runs users and moves the bracket: up when the level passed (or
// had too few samples but met the SLA on them), else down.
func (w *walker) step(users int, phase string) (up bool, err error) {
	l, err := w.run(users, phase)
	if err != nil {
		return false, err
	}
	if l.up() {
		w.lo = users
		if l.Pass {
			w.ceiling = users
		}
		return true, nil
	}
	if w.failing == nil || users < w.hi {
		w.hi, w.failing = users, l
	}
	return false, nil
}

// bisect narrows [lo, hi] to the resolution.
func (w *walker) bisect() error {
	for w.failing != nil && w.hi-w.lo > w.o.resolution(w.lo) && w.hi-w.lo > 1 {
		if _, err := w.step(w.lo+(w.hi-w.lo)/2, "bisect"); err != nil {
			return err
		}
	}
	return nil
}

// LevelLine is one repeat of a sweep level as a progress line (the sweep's
// step, grid or bisect; "still settling:" after the users when the run's
// window was; p95 latencies; the verdict with the first failing clause):
//
//	bisect 165 users 2431 tok/s ttft95 1.27s itl95 21.1ms ✗ P2 ttft p95 2.26s > 2s
func LevelLine(phase string, l Level, repeat int) string {
	r := l.Repeats[repeat]
	v := "ok"
	switch {
	case r.Insufficient:
		v = "unjudged, few samples: " + r.FailedClause
	case !r.Pass:
		v = "✗ " + r.FailedClause
	}
	rep := ""
	if len(l.Repeats) > 1 {
		rep = fmt.Sprintf(" (repeat %d)", repeat+1)
	}
	if ev, ok := r.Detail.(*Evaluation); ok && ev.Summary != nil && ev.Summary.Settling.Flagged {
		// early in the line, which progress cuts at its width; the
		// summary says what it means
		rep += " still settling:"
	}
	return fmt.Sprintf("%s %d users%s %.0f tok/s ttft95 %s itl95 %s %s",
		phase, l.Users, rep, r.OutputThroughput, shortSeconds(r.TTFTP95), shortSeconds(r.ITLP95), v)
}

// shortSeconds prints a latency in seconds as 903ms or 1.27s.
func shortSeconds(s float64) string {
	if s >= 1 {
		return fmt.Sprintf("%.3gs", s)
	}
	return fmt.Sprintf("%.3gms", s*1000)
}

// MaxLevels is the most levels a sweep with these options can run: every
// grid count up to the first failure plus the bisection between the two
// counts around it. A sweep stops earlier when it fails early or its
// interval is narrow, so this bounds the work left, it does not predict it.
func (o SweepOptions) MaxLevels() int {
	grid := o.grid()
	most, lo := 0, 0
	for i, hi := range grid {
		steps := 0
		for gap := hi - lo; gap > max(o.ResolutionUsers, 1) && gap > 1; gap = (gap + 1) / 2 {
			steps++
		}
		most = max(most, i+1+steps)
		lo = hi
	}
	return most
}

// grid is the counts the sweep walks up before it bisects.
func (o SweepOptions) grid() []int {
	if len(o.Grid) > 0 || o.Start < 1 || o.Max < o.Start {
		return o.Grid
	}
	var grid []int
	for u := o.Start; ; u *= 2 {
		if u >= o.Max {
			return append(grid, o.Max)
		}
		grid = append(grid, u)
	}
}

// Sweep runs eval at increasing user counts until the SLA fails, then bisects
// between the last passing and the first failing count. A count passes only
// when every repeat passes. Each count is evaluated at most once per seed.
// With o.Seeds > 1 every other seed then finds its own ceiling by a walk
// from this one's, and the result carries their Interval.
func Sweep(ctx context.Context, eval LevelFunc, o SweepOptions) (*SweepResult, error) {
	if o.Repeats < 1 {
		o.Repeats = 1
	}
	if len(o.Grid) == 0 && (o.Start < 1 || o.Max < o.Start) {
		return nil, fmt.Errorf("sweep: need 1 <= start (%d) <= max (%d)", o.Start, o.Max)
	}
	w := &walker{ctx: ctx, eval: eval, o: o, done: map[int]*Level{}}
	grid := o.grid()
	for _, u := range grid {
		up, err := w.step(u, "grid")
		if err != nil {
			return nil, err
		}
		if !up {
			break
		}
	}
	if err := w.bisect(); err != nil {
		return nil, err
	}
	// The walk ends between lo (the largest count that went up) and the
	// first failure; the ceiling is the largest count judged to pass,
	// and an unjudged lo above it is reported as unconfirmed.
	res := &SweepResult{Ceiling: w.ceiling, Resolution: o.resolution(max(w.ceiling, 1))}
	if w.lo > w.ceiling {
		res.Unconfirmed, res.UnconfirmedUsers = true, w.lo
	}
	if w.failing != nil {
		res.FirstFailing, res.FailedClause = w.hi, w.failing.FailedClause
	}
	for _, l := range w.done {
		res.Levels = append(res.Levels, *l)
	}
	sort.Slice(res.Levels, func(i, j int) bool { return res.Levels[i].Users < res.Levels[j].Users })
	res.Knee = knee(res.Levels)
	res.Spread = spread(res.Levels)
	if err := AddUncertainty(ctx, eval, o, res); err != nil {
		return nil, err
	}
	return res, nil
}

// AddUncertainty says how well res, a walk made with eval and o, measured
// the capacity: with o.Precision.Target set it refines the capacity
// estimate on fresh workload seeds (refine.go), else it walks o.Seeds−1
// more seeds for the ceiling's seed interval (interval.go).
func AddUncertainty(ctx context.Context, eval LevelFunc, o SweepOptions, res *SweepResult) error {
	if o.Repeats < 1 {
		o.Repeats = 1
	}
	if o.Precision.Target > 0 {
		return refine(ctx, eval, o, res)
	}
	return AddInterval(ctx, eval, o, res)
}

func meanThroughput(l Level) float64 {
	s := 0.0
	for _, r := range l.Repeats {
		s += r.OutputThroughput
	}
	return s / float64(max(len(l.Repeats), 1))
}

// knee finds the point of the throughput curve farthest above the chord from
// its first to its highest point (the Kneedle method on normalised axes):
// where adding users stops adding throughput in proportion.
func knee(levels []Level) int {
	if len(levels) < 3 {
		return 0
	}
	x0, x1 := float64(levels[0].Users), float64(levels[len(levels)-1].Users)
	ys := make([]float64, len(levels))
	y0, y1 := math.Inf(1), math.Inf(-1)
	for i, l := range levels {
		ys[i] = meanThroughput(l)
		y0, y1 = math.Min(y0, ys[i]), math.Max(y1, ys[i])
	}
	if x1 == x0 || y1 == y0 {
		return 0
	}
	best, bestD := 0, 0.0
	for i, l := range levels {
		xn := (float64(l.Users) - x0) / (x1 - x0)
		yn := (ys[i] - y0) / (y1 - y0)
		if d := yn - xn; d > bestD {
			best, bestD = l.Users, d
		}
	}
	return best
}

// spread is the largest (max-min)/mean of throughput over repeats of a level.
func spread(levels []Level) float64 {
	worst := 0.0
	for _, l := range levels {
		if len(l.Repeats) < 2 {
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range l.Repeats {
			lo, hi = math.Min(lo, r.OutputThroughput), math.Max(hi, r.OutputThroughput)
		}
		if m := meanThroughput(l); m > 0 {
			worst = math.Max(worst, (hi-lo)/m)
		}
	}
	return worst
}
