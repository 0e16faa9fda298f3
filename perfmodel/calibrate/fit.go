package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/spoc-project/spoc/perfmodel"
)

// Result is a fit's outcome.
type Result struct {
	Factors     perfmodel.Factors `json:"factors"`
	Params      []string          `json:"params"`
	Evaluations int               `json:"evaluations"`
	// Unidentified are requested factors no fitted point exercises
	// (Unexercised); they were not fitted. Those in Tied took the fitted
	// value of the same kernel family's other class; the rest keep their
	// start values.
	Unidentified []string `json:"unidentified,omitempty"`
	// Tied maps an unidentified factor to the fitted factor whose value it
	// took (SharedClasses).
	Tied map[string]string `json:"tied,omitempty"`
	// Envelope is the range of conditions the fitted points cover
	// (EnvelopeOf); plans check their operating points against it.
	Envelope perfmodel.Envelope `json:"envelope"`
	// Validation is the fitted factors' error on the points fitted.
	Validation Validation    `json:"validation"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// minSeconds keeps a fitted overhead's logarithm finite.
const minSeconds = 1e-9

// toFree maps a factor to the unconstrained space Nelder–Mead searches:
// logit for fractions (so they stay in (0, 1)), log for durations (≥ 0).
func toFree(name string, v float64) float64 {
	if perfmodel.IsFraction(name) {
		v = math.Min(math.Max(v, 1e-6), 1-1e-6)
		return math.Log(v / (1 - v))
	}
	return math.Log(math.Max(v, minSeconds))
}

func fromFree(name string, u float64) float64 {
	if perfmodel.IsFraction(name) {
		return 1 / (1 + math.Exp(-u))
	}
	return math.Exp(u)
}

// Fit adjusts opts.Params of opts.Start to minimise the robust error between
// predicted and measured metrics over the points. It is deterministic for a
// deterministic Predictor.
func Fit(ctx context.Context, points []Point, opts Options) (Result, error) {
	start := time.Now()
	opts = opts.withDefaults()
	pts, err := prepare(points, opts.Model)
	if err != nil {
		return Result{}, err
	}
	if err := opts.Start.Validate(); err != nil {
		return Result{}, fmt.Errorf("calibrate: start: %w", err)
	}
	names := slices.Clone(opts.Params)
	for _, n := range names {
		if _, err := opts.Start.Get(n); err != nil {
			return Result{}, fmt.Errorf("calibrate: %w", err)
		}
	}
	unident, err := Unexercised(pts, names, opts.Model)
	if err != nil {
		return Result{}, fmt.Errorf("calibrate: %w", err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(unident, n) })
	if len(names) == 0 {
		return Result{}, errors.New("calibrate: no factors to fit")
	}
	ev := newEvaluator(pts, opts)
	factorsAt := func(x []float64) perfmodel.Factors {
		f := opts.Start
		for i, n := range names {
			_ = f.Set(n, fromFree(n, x[i]))
		}
		return f
	}
	x0 := make([]float64, len(names))
	for i, n := range names {
		v, _ := opts.Start.Get(n)
		x0[i] = toFree(n, v)
	}
	// prior is a weak ridge towards the starting factors in the free space:
	// it keeps a factor the data barely constrain from running into the
	// (0, 1] boundary, and costs almost nothing where the data speak.
	prior := func(x []float64) float64 {
		var s float64
		for i := range x {
			d := x[i] - x0[i]
			s += d * d
		}
		return opts.Prior * s / float64(len(x))
	}
	var evalErr error
	objective := func(x []float64) float64 {
		if evalErr != nil {
			return math.Inf(1)
		}
		preds, err := ev.predict(ctx, factorsAt(x))
		if err != nil {
			evalErr = err
			return math.Inf(1)
		}
		return ev.loss(preds) + prior(x)
	}
	// Nelder–Mead explores with half the budget. It stalls in narrow
	// valleys, so it runs in rounds of at most 40·(n+1) evaluations, each
	// restarted from the best vertex with a fresh simplex of half the
	// previous size, until a round improves the loss by less than Tolerance
	// (relative).
	x, best := x0, math.Inf(1)
	evals := 0
	nmBudget := opts.MaxEvaluations / 2
	for step := opts.SimplexStep; evals < nmBudget; step = math.Max(step/2, 0.01) {
		nx, v, n, err := NelderMead(ctx, objective, x, step, 0, min(nmBudget-evals, 40*(len(names)+1)))
		evals += n
		if evalErr != nil {
			return Result{}, fmt.Errorf("calibrate: %w", evalErr)
		}
		if err != nil {
			return Result{}, fmt.Errorf("calibrate: %w", err)
		}
		improved := best - v
		if v < best {
			x, best = nx, v
		}
		if !(improved > opts.Tolerance*best) {
			break
		}
	}
	// Levenberg–Marquardt on the Huber residuals (a forward-difference
	// Jacobian, 1 % steps in the free space) then converges along the
	// valley; it only accepts improvements.
	var buf []float64
	residuals := func(x []float64) []float64 {
		if evalErr != nil {
			return []float64{math.Inf(1)}
		}
		preds, err := ev.predict(ctx, factorsAt(x))
		if err != nil {
			evalErr = err
			return []float64{math.Inf(1)}
		}
		buf = ev.residuals(preds, buf)
		// The same prior as extra residuals, on LM's scale (2 × weight sum).
		scale := math.Sqrt(2 * ev.weightSum() * opts.Prior / float64(len(x)))
		for i := range x {
			buf = append(buf, scale*(x[i]-x0[i]))
		}
		return buf
	}
	x, _, n, err := levenbergMarquardt(ctx, residuals, x, 1e-2, opts.Tolerance, opts.MaxEvaluations-evals)
	evals += n
	if evalErr != nil {
		return Result{}, fmt.Errorf("calibrate: %w", evalErr)
	}
	if err != nil {
		return Result{}, fmt.Errorf("calibrate: %w", err)
	}
	fitted := factorsAt(x)
	tied := tieClasses(&fitted, names, unident)
	preds, err := ev.predict(ctx, fitted)
	if err != nil {
		return Result{}, fmt.Errorf("calibrate: %w", err)
	}
	return Result{Factors: fitted, Params: names, Unidentified: unident, Tied: tied, Envelope: EnvelopeOf(pts), Evaluations: evals, Validation: ev.validation(preds),
		Elapsed: time.Since(start)}, nil
}

// SharedClasses pairs the factors of kernel classes of one family that share
// their achieved fractions when the data identify only one of them: an
// expert GEMM streams its 4.25-bit weights and multiplies at its class's
// peak (BF16 for W4A16, FP8 for MXFP4×MXFP8) whichever GPU runs it, so a
// fit that saw one class gives the other its fractions of that other peak.
// docs/calibration.md shows what this transfer is worth on the GPU left out.
var SharedClasses = [][2]string{{"moe_compute", "moe_fp8_compute"}, {"moe_memory", "moe_fp8_memory"}}

// tieClasses copies, for each unidentified factor whose partner in
// SharedClasses was fitted, the partner's value; it returns what it tied.
func tieClasses(f *perfmodel.Factors, fitted, unident []string) map[string]string {
	var tied map[string]string
	for _, pair := range SharedClasses {
		for i := range 2 {
			to, from := pair[i], pair[1-i]
			if slices.Contains(unident, to) && slices.Contains(fitted, from) {
				v, _ := f.Get(from)
				_ = f.Set(to, v)
				if tied == nil {
					tied = map[string]string{}
				}
				tied[to] = from
			}
		}
	}
	return tied
}

// Fold is one round of cross-validation.
type Fold struct {
	// HeldOut is the group predicted without being fitted.
	HeldOut string `json:"held_out"`
	Fit     Result `json:"fit"`
	// Validation is the error on the held-out points.
	Validation Validation `json:"validation"`
}

// LeaveOneOut fits on every group of points but one and validates on the one
// left out, for each group that group names.
func LeaveOneOut(ctx context.Context, points []Point, opts Options, group func(Point) string) ([]Fold, error) {
	var keys []string
	for _, p := range points {
		if k := group(p); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) < 2 {
		return nil, fmt.Errorf("calibrate: cross-validation needs two groups, got %d", len(keys))
	}
	var folds []Fold
	for _, k := range keys {
		var train, test []Point
		for _, p := range points {
			if group(p) == k {
				test = append(test, p)
			} else {
				train = append(train, p)
			}
		}
		res, err := Fit(ctx, train, opts)
		if err != nil {
			return nil, fmt.Errorf("fold %s: %w", k, err)
		}
		v, err := Validate(ctx, test, res.Factors, opts)
		if err != nil {
			return nil, fmt.Errorf("fold %s: %w", k, err)
		}
		folds = append(folds, Fold{HeldOut: k, Fit: res, Validation: v})
	}
	return folds, nil
}

// ByTensorParallel groups points by tensor parallel size ("tp=4"), for
// leave-one-TP-out cross-validation.
func ByTensorParallel(p Point) string { return fmt.Sprintf("tp=%d", p.TensorParallel) }
