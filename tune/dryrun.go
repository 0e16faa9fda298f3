package tune

import (
	"context"
	"fmt"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/vllm"
)

// Launch is what one trial of the first generation would start.
type Launch struct {
	Trial  int           `json:"trial"`
	Params search.Params `json:"params"`
	// Launch is the launcher's description: the command line of a process,
	// the manifests of a Kubernetes trial, the simulated deployment.
	Launch string `json:"launch"`
}

// FirstGeneration returns what a fresh study would launch first: one
// population (the whole budget when smaller, or 10 trials for samplers
// without generations), the seeds (plan.Seeds) first, then sampled exactly
// as the study loop samples, rules and canonical duplicates included. Nothing is started and no storage is touched.
func FirstGeneration(ctx context.Context, plan *Plan, launcher engine.Launcher, population, budget int) ([]Launch, error) {
	n := population
	if _, ok := plan.Sampler.(*nsga2.Sampler); !ok {
		n = 10
	}
	n = min(n, budget)
	dr, _ := launcher.(engine.DryRunner)
	history := make([]search.Trial, 0, n)
	out := make([]Launch, 0, n)
	for i := 0; i < n; i++ {
		gen := search.GenerationOf(plan.Sampler, history)
		var p search.Params
		if i < len(plan.Seeds) {
			p = plan.Seeds[i].Params
		} else {
			var err error
			if p, _, err = search.SampleDistinct(ctx, plan.Sampler, history, plan.Space, 0); err != nil {
				return nil, fmt.Errorf("dry run: sample trial %d: %w", i, err)
			}
		}
		l := Launch{Trial: i, Params: p}
		if dr != nil {
			var err error
			if l.Launch, err = dr.DryRun(engine.Params(vllm.Merge(plan.Fixed, p))); err != nil {
				return nil, fmt.Errorf("dry run: trial %d: %w", i, err)
			}
		}
		out = append(out, l)
		history = append(history, search.Trial{Number: i, Params: p, State: search.StateRunning, Generation: gen})
	}
	return out, nil
}
