package problems

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spoc-project/spoc/search"
)

// Result is the outcome of running a sampler on a problem.
type Result struct {
	Problem     string `json:"problem"`
	Evaluations int    `json:"evaluations"`
	// Front holds the objective values of the final Pareto front (feasible,
	// non-dominated trials), in trial order.
	Front               [][]float64    `json:"front"`
	Reference           []float64      `json:"reference_point"`
	Hypervolume         float64        `json:"hypervolume"`
	TrueHypervolume     float64        `json:"true_hypervolume"`
	RelativeHypervolume float64        `json:"relative_hypervolume"`
	FeasibleEvaluations int            `json:"feasible_evaluations"`
	SamplerSeconds      float64        `json:"sampler_seconds"`
	Trials              []search.Trial `json:"-"`
}

// Run evaluates prob with s for n trials, serially and in memory, and
// reports the final front and its hypervolume. Trial timestamps are
// synthetic (one nanosecond apart) so that runs are reproducible.
func Run(ctx context.Context, prob Problem, s search.Sampler, n int) (*Result, error) {
	if n <= 0 {
		return nil, fmt.Errorf("run %s: evaluations must be > 0, got %d", prob.Name, n)
	}
	history := make([]search.Trial, 0, n)
	var sampling time.Duration
	epoch := time.Unix(0, 0).UTC()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		gen := search.GenerationOf(s, history)
		p, err := search.SampleValid(ctx, s, history, prob.Space, 0)
		sampling += time.Since(t0)
		if errors.Is(err, search.ErrExhausted) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("run %s: trial %d: %w", prob.Name, i, err)
		}
		v, c := prob.Evaluate(p)
		history = append(history, search.Trial{
			Number: i, Params: p, Values: v, Constraints: c, State: search.StateComplete,
			Start: epoch.Add(time.Duration(2 * i)), Complete: epoch.Add(time.Duration(2*i + 1)),
			Generation: gen,
		})
	}
	res := &Result{
		Problem: prob.Name, Evaluations: len(history), Reference: prob.Reference,
		TrueHypervolume: prob.TrueHypervolume, SamplerSeconds: sampling.Seconds(), Trials: history,
	}
	for _, t := range search.ParetoFront(history, prob.Directions) {
		res.Front = append(res.Front, t.Values)
	}
	for i := range history {
		if history[i].Feasible() {
			res.FeasibleEvaluations++
		}
	}
	hv, err := search.FrontHypervolume(history, prob.Directions, prob.Reference)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", prob.Name, err)
	}
	res.Hypervolume = hv
	if prob.TrueHypervolume > 0 {
		res.RelativeHypervolume = hv / prob.TrueHypervolume
	}
	return res, nil
}
