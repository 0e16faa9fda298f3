package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// EstimatorMethod names how a CapacityEstimate is computed, for the
// summary (docs/capacity.md, "What the capacity is").
const EstimatorMethod = "exceedance-quasibinomial-fieller"

// DefaultConfidence is the confidence level of a capacity's interval.
const DefaultConfidence = 0.95

// ClauseCount is what one run measured of one SLA percentile clause: how
// many samples it judged and how many of them were over the clause's
// limit. A clause "p95 ≤ L" holds on a long window exactly when at most 5 %
// of its samples exceed L, so the share over the limit is the quantity
// whose expectation the capacity is defined by: unlike a run's sample
// p95, the share of one run is an unbiased estimate whatever the window's
// length, and the shares of several runs pool.
type ClauseCount struct {
	// Scope is "overall" or a profile; Clause is "ttft p95", "itl p95", ….
	Scope  string `json:"scope"`
	Clause string `json:"clause"`
	// Allowance is the share of samples the clause allows over its limit:
	// 1 − percentile/100 (0.05 for a p95 clause).
	Allowance float64 `json:"allowance"`
	Samples   int64   `json:"samples"`
	Over      int64   `json:"over"`
}

// Key is "scope clause", the clause's name in estimates.
func (c ClauseCount) Key() string { return c.Scope + " " + c.Clause }

// KneeRun is one run as the capacity estimator sees it: its load, its
// workload seed index and what it measured of every SLA percentile clause.
type KneeRun struct {
	Users int `json:"users"`
	// Seed is the run's seed index (Load.SeedOffset).
	Seed    int           `json:"seed"`
	Clauses []ClauseCount `json:"clauses"`
	// Margin is the run's worst clause as log(value/limit): above 0 the
	// run failed that clause. +Inf for a run that could not be judged on
	// values (overloaded: nothing completed).
	Margin InfFloat `json:"margin"`
	Pass   bool     `json:"pass"`
	// Excluded says why the run is left out of the estimate (empty: it
	// is in): a run the client bound or whose window was still settling
	// measured something other than the deployment's steady state.
	Excluded string `json:"excluded,omitempty"`
	// Uncounted is, for a run that failed on something the fit does not
	// count — a scope where nothing completed, no request at all, the
	// error rate — that violation's message.
	Uncounted string `json:"uncounted,omitempty"`
}

// CapacityEstimate is the capacity of one configuration: the user count at
// which the binding SLA clause's expected share of samples over its limit
// reaches the clause's allowance (the load whose steady state just meets
// the SLA's percentile), with its confidence interval, and the spread of
// one run's verdict over workload seeds.
type CapacityEstimate struct {
	Method string `json:"method"`
	// Users is the estimate; [Lo, Hi] its confidence interval at
	// Confidence. Hi is +Inf (JSON null) and Bounded false when the runs
	// do not bound it.
	Users      float64  `json:"users"`
	Lo         float64  `json:"lo"`
	Hi         InfFloat `json:"hi"`
	Bounded    bool     `json:"bounded"`
	Confidence float64  `json:"confidence"`
	// Precision is the interval's half-width as a share of Users
	// ((Hi−Lo)/2/Users); +Inf (JSON null) when unbounded.
	Precision InfFloat `json:"precision"`
	// Binding is the clause whose crossing is lowest ("P2 ttft p95").
	Binding string `json:"binding_clause"`
	// Clauses are the crossings of every clause that came near its limit.
	Clauses []ClauseCrossing `json:"clauses,omitempty"`
	// SeedSpread is where one run (a fresh workload seed, these windows)
	// changes from passing to failing: the central Confidence range of its
	// threshold, from the runs' margins (nil when they do not determine
	// it).
	SeedSpread *SeedSpread `json:"seed_spread,omitempty"`
	// Runs and Levels count what the estimate used; Dispersion is the
	// quasi-binomial dispersion of the binding clause (1: runs vary as
	// much as sampling alone explains; more: seeds differ).
	Runs       int     `json:"runs"`
	Levels     int     `json:"levels"`
	Dispersion float64 `json:"dispersion"`
}

// ClauseCrossing is one clause's fitted crossing of its allowance.
type ClauseCrossing struct {
	Clause string   `json:"clause"`
	Users  float64  `json:"users"`
	Lo     float64  `json:"lo"`
	Hi     InfFloat `json:"hi"`
	// Bounded is false when the interval is open above (or the fit has
	// no crossing it can place).
	Bounded bool `json:"bounded"`
	// Slope is the fitted change of the logit of the share over the limit
	// per user; Dispersion the quasi-binomial dispersion.
	Slope      float64 `json:"slope_per_user"`
	Dispersion float64 `json:"dispersion"`
	// MaxShare is the largest pooled share over the limit at one level,
	// as a multiple of the allowance.
	MaxShare float64 `json:"max_share_of_allowance"`
}

// SeedSpread is the range over which one run's verdict changes with the
// workload seed: a run at Lo users passes, and at Hi fails, with
// probability (1+Confidence)/2.
type SeedSpread struct {
	Lo float64 `json:"lo"`
	// Median is the count at which one run passes half the time.
	Median float64 `json:"median"`
	Hi     float64 `json:"hi"`
	// SDUsers is one run's threshold's standard deviation in users.
	SDUsers float64 `json:"sd_users"`
}

// ErrNoCrossing: the runs do not bracket the capacity (no clause came near
// its limit, or the share over the limit does not grow with users).
var ErrNoCrossing = errors.New("the runs do not bracket the capacity")

// nearShare is how close to its allowance a clause's pooled share must
// come at some level (as a multiple of the allowance) to be a candidate
// for the binding clause: one that stays far below it everywhere the
// runs went cannot be placed by them and does not bind there.
const nearShare = 0.5

// EstimateCapacity fits, for every SLA clause that came near its limit, a
// quasi-binomial logistic regression of the share of samples over the
// limit on the user count — every sample of every run, the dispersion
// estimated from the runs' Pearson residuals so that seed-to-seed
// variation widens the interval — and takes the lowest crossing of a
// clause's allowance as the capacity, with Fieller's interval for that
// crossing (the ratio of two estimated coefficients).
func EstimateCapacity(runs []KneeRun, confidence float64) (*CapacityEstimate, error) {
	if confidence <= 0 || confidence >= 1 {
		confidence = DefaultConfidence
	}
	kept := runs[:0:0]
	for _, r := range runs {
		if r.Excluded == "" {
			kept = append(kept, r)
		}
	}
	runs = kept
	levels := map[int]bool{}
	for _, r := range runs {
		levels[r.Users] = true
	}
	if len(levels) < 2 || len(runs) < 3 {
		return nil, fmt.Errorf("%w: %d runs at %d user counts (the fit needs at least 3 runs at 2 counts)", ErrNoCrossing, len(runs), len(levels))
	}
	est := &CapacityEstimate{Method: EstimatorMethod, Confidence: confidence, Runs: len(runs), Levels: len(levels)}
	var best *ClauseCrossing
	for _, key := range clauseKeys(runs) {
		cr, ok, err := fitClause(runs, key, confidence)
		if err != nil {
			// a clause that came near its limit but cannot be placed may
			// bind below every clause that can: no estimate is better
			// than one that ignores it
			return nil, err
		}
		if !ok {
			continue
		}
		est.Clauses = append(est.Clauses, cr)
	}
	sort.Slice(est.Clauses, func(i, j int) bool { return est.Clauses[i].Users < est.Clauses[j].Users })
	for i := range est.Clauses {
		if best == nil {
			best = &est.Clauses[i]
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: no clause's share over its limit came within %.0f %% of its allowance and grew with users", ErrNoCrossing, 100*nearShare)
	}
	// a run that failed below the crossing on what the fit cannot count
	// contradicts it: the estimate would state a capacity at which
	// runs failed (seen live with 30 s windows: every run at 32 and 52
	// users failed because P2's long prompts completed nothing, and the
	// P0 clause alone put the capacity at 41, "at least 32")
	for _, r := range runs {
		if r.Uncounted != "" && float64(r.Users) <= best.Users {
			return nil, fmt.Errorf("%w: a run at %d users failed on what the fit cannot count (%s), below the %.0f users its clauses place", ErrNoCrossing, r.Users, r.Uncounted, best.Users)
		}
	}
	est.Users, est.Binding, est.Dispersion = best.Users, best.Clause, best.Dispersion
	// Several clauses may bind within each other's uncertainty: the
	// capacity is the lowest crossing, so its interval runs from the
	// lowest lower bound to the lowest upper bound.
	est.Lo, est.Hi, est.Bounded = best.Lo, best.Hi, best.Bounded
	for _, c := range est.Clauses[1:] {
		est.Lo = math.Min(est.Lo, c.Lo)
	}
	est.Precision = InfFloat(math.Inf(1))
	if est.Bounded && est.Users > 0 {
		est.Precision = InfFloat((float64(est.Hi) - est.Lo) / 2 / est.Users)
	}
	est.SeedSpread = seedSpread(runs, confidence)
	return est, nil
}

// clauseKeys lists the clauses the runs measured, in a stable order.
func clauseKeys(runs []KneeRun) []string {
	seen := map[string]bool{}
	var keys []string
	for _, r := range runs {
		for _, c := range r.Clauses {
			if k := c.Key(); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// binomialPoint is one run's count of one clause.
type binomialPoint struct {
	x      float64
	n, y   float64
	allows float64
}

// fitClause fits one clause; ok is false when the clause never came near
// its allowance. A clause that did but whose fit fails or whose share does
// not grow with users is an error wrapping ErrNoCrossing.
func fitClause(runs []KneeRun, key string, confidence float64) (ClauseCrossing, bool, error) {
	var pts []binomialPoint
	pooled := map[int][2]float64{}
	allowance := 0.0
	for _, r := range runs {
		for _, c := range r.Clauses {
			if c.Key() != key || c.Samples <= 0 {
				continue
			}
			// half a sample over and half under the limit added to every
			// run (Haldane's correction) keeps the fit finite when no run
			// below some count and every run above it exceeds the limit:
			// without it the logistic fit separates, diverges, and the
			// clause that binds drops out (seen live: passes at 80 users,
			// failures at 120 and 140, and an estimate of 140 from a
			// looser clause)
			pts = append(pts, binomialPoint{x: float64(r.Users), n: float64(c.Samples) + 1, y: float64(min(c.Over, c.Samples)) + 0.5, allows: c.Allowance})
			p := pooled[r.Users]
			pooled[r.Users] = [2]float64{p[0] + float64(c.Over), p[1] + float64(c.Samples)}
			allowance = c.Allowance
		}
	}
	if len(pts) < 3 || allowance <= 0 || allowance >= 1 {
		return ClauseCrossing{}, false, nil
	}
	maxShare := 0.0
	for _, p := range pooled {
		maxShare = math.Max(maxShare, p[0]/p[1]/allowance)
	}
	if maxShare < nearShare || len(pooled) < 2 {
		return ClauseCrossing{}, false, nil
	}
	fit, ok := logitFit(pts)
	if !ok || fit.b <= 0 {
		return ClauseCrossing{}, false, fmt.Errorf("%w: %s came within %.0f %% of its allowance but its share over the limit does not grow with users in these runs", ErrNoCrossing, key, 100*nearShare)
	}
	target := math.Log(allowance / (1 - allowance))
	// the logistic line is a local model of the knee: refit on the counts
	// between the nearest saturated ones either side of the crossing
	for range 2 {
		local := localPoints(pts, pooled, target, fit.xbar+(target-fit.a)/fit.b)
		if len(local) == len(pts) {
			break
		}
		lf, ok := logitFit(local)
		if !ok || lf.b <= 0 {
			break
		}
		pts, fit = local, lf
	}
	cr := ClauseCrossing{Clause: key, Slope: fit.b, Dispersion: fit.phi, MaxShare: maxShare}
	cr.Users = fit.xbar + (target-fit.a)/fit.b
	// Fieller: the d = x − x̄ with (a − target + b d)² ≤
	// t² (Va + 2 d Cab + d² Vb).
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(fitDF(pts, pooled, target), 1))}.Quantile((1 + confidence) / 2)
	a0 := fit.a - target
	qa := fit.b*fit.b - t*t*fit.vb
	qb := 2 * (a0*fit.b - t*t*fit.cab)
	qc := a0*a0 - t*t*fit.va
	cr.Lo, cr.Hi = math.Inf(-1), InfFloat(math.Inf(1))
	if qa > 0 {
		disc := qb*qb - 4*qa*qc
		if disc >= 0 {
			s := math.Sqrt(disc)
			cr.Lo = fit.xbar + (-qb-s)/(2*qa)
			cr.Hi = InfFloat(fit.xbar + (-qb+s)/(2*qa))
			cr.Bounded = true
		}
	}
	if !cr.Bounded {
		// the slope is not distinguished from 0: the runs do not place
		// the crossing; keep the point estimate, say the interval is open
		cr.Lo = math.Max(0, math.Min(cr.Users, minX(pts)))
	}
	cr.Lo, cr.Hi, cr.Bounded = supported(pooled, allowance, cr.Users, cr.Lo, cr.Hi)
	cr.Lo = math.Max(cr.Lo, 0)
	return cr, true, nil
}

// fitDF is the degrees of freedom the interval's t quantile is given: a
// run at a saturated count (every run there far from the allowance)
// adds little to the dispersion's estimate, so all the runs at one such
// count count once, as do the two coefficients the fit estimates.
// Counting each of them (as len(pts)−2 did) gave a steep knee, measured
// by three runs at the knee between three all-passing and three
// all-failing ones, seven degrees of freedom where its spread was told
// by about three.
func fitDF(pts []binomialPoint, pooled map[int][2]float64, target float64) int {
	runs := 0
	saturated := map[float64]bool{}
	for _, p := range pts {
		q := pooled[int(p.x)]
		share := (q[0] + 0.5) / (q[1] + 1)
		if math.Abs(math.Log(share/(1-share))-target) > saturatedLogit {
			saturated[p.x] = true
			continue
		}
		runs++
	}
	return runs + len(saturated) - 2
}

// saturatedLogit is how far (in logit units) from the allowance a count's
// pooled share lies when the count is saturated: every run there far under
// the limit (a 5 % allowance: under 0.26 % over) or far over it (over 51 %).
const saturatedLogit = 3.0

// localPoints keeps the runs at counts between the nearest saturated count
// below the crossing x and the nearest above it, both included. Runs
// further out say only that the share is still near 0 (or 1) there; in a
// straight-line fit of the logit they pull the line off the knee and their
// misfit inflates the dispersion (seen on a steep knee: 80 users with no
// sample over the limit, 120 with all of them, refinement runs at 95–105,
// a dispersion of 400 and no upper bound after 30 runs). Fewer than 3
// runs at 2 counts left: all the runs.
func localPoints(pts []binomialPoint, pooled map[int][2]float64, target, x float64) []binomialPoint {
	below, above := math.Inf(-1), math.Inf(1)
	for u, p := range pooled {
		share := (p[0] + 0.5) / (p[1] + 1)
		l := math.Log(share / (1 - share))
		switch f := float64(u); {
		case f <= x && l < target-saturatedLogit && f > below:
			below = f
		case f > x && l > target+saturatedLogit && f < above:
			above = f
		}
	}
	var local []binomialPoint
	counts := map[float64]bool{}
	for _, p := range pts {
		if p.x >= below && p.x <= above {
			local = append(local, p)
			counts[p.x] = true
		}
	}
	if len(local) < 3 || len(counts) < 2 {
		return pts
	}
	return local
}

// supportLogit is how far (in logit units of the share over the limit)
// the pooled share of the counts next to a crossing may lie from the
// allowance for the fitted line between them to be trusted: 2 units
// either side of a 5 % allowance are 0.7 % and 28 %.
const supportLogit = 2.0

// supported widens [lo, hi] to the counts next to the crossing x when
// their pooled shares lie far from the allowance, and clips it to the
// nearest saturated counts either side. The logistic line places a
// crossing between two counts from the shares at them; where the nearest
// count below is far under the allowance (no sample over, say) and the
// nearest above far over it, the runs say only that the crossing lies
// between the counts, and the line's place for it is the model's, not the
// measurement's: on a steep knee measured at 80 (no run over the TTFT
// limit) and 120 users (every sample over) the fit said 91.7 ± 1 % where
// runs on fresh seeds put the capacity at 100. The interval then runs to
// the unsupported side's count, and refinement runs go between
// (docs/capacity.md, "Precision"). The other way round, a share that
// grows with users crosses its allowance above a count where it was far
// under and below one where it was far over, whatever the line's
// uncertainty says.
func supported(pooled map[int][2]float64, allowance, x, lo float64, hi InfFloat) (float64, InfFloat, bool) {
	target := math.Log(allowance / (1 - allowance))
	logit := func(u int) float64 {
		p := pooled[u]
		share := (p[0] + 0.5) / (p[1] + 1)
		return math.Log(share / (1 - share))
	}
	below, above := math.Inf(-1), math.Inf(1)
	satBelow, satAbove := math.Inf(-1), math.Inf(1)
	informative := 0
	for u := range pooled {
		f, l := float64(u), logit(u)
		if f <= x {
			below = math.Max(below, f)
		} else {
			above = math.Min(above, f)
		}
		switch {
		case math.Abs(l-target) <= saturatedLogit:
			informative++
		case f <= x && l < target:
			satBelow = math.Max(satBelow, f)
		case f > x && l > target:
			satAbove = math.Min(satAbove, f)
		}
	}
	if !math.IsInf(below, 0) && logit(int(below)) < target-supportLogit {
		lo = math.Min(lo, below)
	}
	if !math.IsInf(above, 0) && logit(int(above)) > target+supportLogit {
		hi = InfFloat(math.Max(float64(hi), above))
	}
	// a slope is measured only where shares are: with fewer than two
	// counts whose share is not saturated, the line's slope comes from
	// the saturated counts' half-sample corrections, and the interval is
	// the bracket of saturated counts around the crossing (seen: runs at
	// 89 users with no sample over, one run at 99 with 6 %, 120 with
	// all over, and 98.8 [89, 99.1] where fresh seeds put it at 100.3)
	if informative < 2 {
		if !math.IsInf(satBelow, 0) {
			lo = math.Min(lo, satBelow)
		}
		hi = InfFloat(math.Max(float64(hi), satAbove))
	}
	if !math.IsInf(satBelow, 0) {
		lo = math.Max(lo, satBelow)
	}
	hi = InfFloat(math.Min(float64(hi), satAbove))
	return lo, hi, !math.IsInf(float64(hi), 1)
}

func minX(pts []binomialPoint) float64 {
	m := math.Inf(1)
	for _, p := range pts {
		m = math.Min(m, p.x)
	}
	return m
}

// logitResult is a fitted logit(π) = a + b (x − xbar), the quasi-binomial
// covariance of (a, b) and the dispersion phi.
type logitResult struct {
	a, b, xbar  float64
	va, vb, cab float64
	phi         float64
}

// logitFit fits a binomial logistic regression by iteratively reweighted
// least squares, centred at the sample-weighted mean of x, and scales its
// covariance by the Pearson dispersion.
func logitFit(pts []binomialPoint) (logitResult, bool) {
	var sw, swx float64
	for _, p := range pts {
		sw += p.n
		swx += p.n * p.x
	}
	xbar := swx / sw
	// start from the pooled share with a flat slope
	var sy float64
	for _, p := range pts {
		sy += p.y
	}
	p0 := (sy + 0.5) / (sw + 1)
	a, b := math.Log(p0/(1-p0)), 0.0
	var iaa, iab, ibb float64
	for iter := 0; iter < 50; iter++ {
		var ga, gb float64
		iaa, iab, ibb = 0, 0, 0
		for _, p := range pts {
			d := p.x - xbar
			pi := sigmoid(a + b*d)
			w := p.n * pi * (1 - pi)
			r := p.y - p.n*pi
			ga += r
			gb += r * d
			iaa += w
			iab += w * d
			ibb += w * d * d
		}
		det := iaa*ibb - iab*iab
		if det <= 0 || math.IsNaN(det) {
			return logitResult{}, false
		}
		da := (ibb*ga - iab*gb) / det
		db := (-iab*ga + iaa*gb) / det
		a, b = a+da, b+db
		if math.Abs(da) < 1e-10 && math.Abs(db) < 1e-12 {
			break
		}
	}
	det := iaa*ibb - iab*iab
	if det <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return logitResult{}, false
	}
	// Pearson dispersion over the runs: how much more the runs' shares
	// vary than binomial sampling of their samples would.
	var chi2 float64
	for _, p := range pts {
		pi := sigmoid(a + b*(p.x-xbar))
		v := p.n * pi * (1 - pi)
		if v > 0 {
			chi2 += (p.y - p.n*pi) * (p.y - p.n*pi) / v
		}
	}
	// Not floored at 1: near the knee the runs' shares vary less than
	// independent samples would (the queue that makes a request late is
	// shared by the requests around it, and a window's sample count is
	// itself set by the load), and a floor made the intervals about twice
	// as wide as the long-window check needs (docs/capacity.md,
	// "Checked"); minDispersion only keeps a chance perfect fit from
	// claiming no noise at all.
	phi := 1.0
	if df := len(pts) - 2; df > 0 {
		phi = math.Max(minDispersion, chi2/float64(df))
	}
	// the inverse of the information, scaled by the dispersion
	va := phi * ibb / det
	vb := phi * iaa / det
	cab := -phi * iab / det
	return logitResult{a: a, b: b, xbar: xbar, va: va, vb: vb, cab: cab, phi: phi}, true
}

// minDispersion is the least dispersion a fit is given.
const minDispersion = 1.0

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// seedSpread fits the runs' margins (log of the worst clause's value over
// its limit) linearly on users: a run passes when its margin is below 0,
// and the residuals' spread, divided by the slope, is how far one run's
// threshold moves with its seed. nil when fewer than four runs have a
// finite margin or the margin does not grow with users.
func seedSpread(runs []KneeRun, confidence float64) *SeedSpread {
	var xs, ys []float64
	for _, r := range runs {
		m := float64(r.Margin)
		if math.IsInf(m, 0) || math.IsNaN(m) {
			continue
		}
		xs = append(xs, float64(r.Users))
		ys = append(ys, m)
	}
	n := len(xs)
	if n < 4 {
		return nil
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return nil
	}
	b := sxy / sxx
	if b <= 0 {
		return nil
	}
	a := my - b*mx
	var ss float64
	for i := range xs {
		r := ys[i] - a - b*xs[i]
		ss += r * r
	}
	sd := math.Sqrt(ss/float64(n-2)) / b
	z := distuv.UnitNormal.Quantile((1 + confidence) / 2)
	median := -a / b
	return &SeedSpread{Lo: median - z*sd, Median: median, Hi: median + z*sd, SDUsers: sd}
}

// InfFloat is a float64 that may be +Inf (an interval open above, a run
// with no finite margin): JSON has no infinity, so +Inf is written as
// null and null read back as +Inf.
type InfFloat float64

// MarshalJSON writes +Inf (and NaN) as null.
func (f InfFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads null as +Inf.
func (f *InfFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = InfFloat(math.Inf(1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = InfFloat(v)
	return nil
}
