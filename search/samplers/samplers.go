// Package samplers maps sampler names to implementations, so that the CLI
// and configuration files pick a sampler by name ("tpe", "nsga2",
// "random", "grid") without importing every algorithm themselves.
package samplers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/grid"
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/random"
	"github.com/spoc-project/spoc/search/tpe"
)

// Config holds what any sampler may need; each sampler reads its fields and
// ignores the rest. Zero values select each sampler's defaults.
type Config struct {
	Directions []search.Direction `json:"directions,omitempty"`
	Seed       uint64             `json:"seed"`
	// NSGA-II.
	PopulationSize int             `json:"population_size,omitempty"`
	Crossover      nsga2.Crossover `json:"crossover,omitempty"`
	CrossoverProb  float64         `json:"crossover_prob,omitempty"`
	MutationProb   float64         `json:"mutation_prob,omitempty"`
	// TPE: trials drawn from a Latin hypercube before the model is used
	// (0: tpe.DefaultStartupTrials).
	StartupTrials int `json:"startup_trials,omitempty"`
	// Grid: values per continuous parameter.
	GridPoints int `json:"grid_points,omitempty"`
}

var registry = map[string]func(Config) (search.Sampler, error){
	"nsga2": func(c Config) (search.Sampler, error) {
		return nsga2.New(nsga2.Options{
			PopulationSize: c.PopulationSize, Directions: c.Directions, Crossover: c.Crossover,
			CrossoverProb: c.CrossoverProb, MutationProb: c.MutationProb, Seed: c.Seed,
		})
	},
	"random": func(c Config) (search.Sampler, error) { return random.New(c.Seed), nil },
	"tpe": func(c Config) (search.Sampler, error) {
		return tpe.New(tpe.Options{Directions: c.Directions, Seed: c.Seed, StartupTrials: c.StartupTrials})
	},
	"grid": func(c Config) (search.Sampler, error) { return grid.New(c.GridPoints, c.Seed), nil },
}

// Names lists the registered sampler names.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New builds the named sampler.
func New(name string, c Config) (search.Sampler, error) {
	f, ok := registry[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown sampler %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	s, err := f(c)
	if err != nil {
		return nil, fmt.Errorf("sampler %s: %w", name, err)
	}
	return s, nil
}
