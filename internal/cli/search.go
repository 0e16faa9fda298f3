package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/problems"
	"github.com/spoc-project/spoc/search/samplers"
)

func init() { register(newSearchCmd) }

func newSearchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Exercise spoc's multi-objective samplers on standard test problems",
	}
	cmd.AddCommand(newSearchBenchCmd())
	return cmd
}

// searchBenchOutput is what spoc search bench prints.
type searchBenchOutput struct {
	Sampler    string `json:"sampler"`
	Seed       uint64 `json:"seed"`
	Population int    `json:"population,omitempty"`
	*problems.Result
}

func newSearchBenchCmd() *cobra.Command {
	var (
		problem, sampler, crossover string
		evaluations, population     int
		seed                        uint64
		asJSON                      bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a sampler on a test problem and print the final front and its hypervolume",
		Long: `Bench runs a sampler for a number of evaluations on a standard multi-objective
test problem (` + strings.Join(problems.Names(), ", ") + `) in memory and prints the final
Pareto front, its hypervolume, the reference point used and the hypervolume
relative to the true front's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prob, err := problems.Get(problem)
			if err != nil {
				return usageError(err)
			}
			if evaluations <= 0 {
				return usageErrorf("--evaluations must be > 0, got %d", evaluations)
			}
			s, err := samplers.New(sampler, samplers.Config{
				Directions: prob.Directions, Seed: seed, PopulationSize: population, Crossover: nsga2.Crossover(crossover),
			})
			if err != nil {
				return usageError(err)
			}
			res, err := problems.Run(cmd.Context(), prob, s, evaluations)
			if err != nil {
				return err
			}
			out := searchBenchOutput{Sampler: sampler, Seed: seed, Result: res}
			if sampler == "nsga2" {
				out.Population = population
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			printSearchBench(cmd.OutOrStdout(), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&problem, "problem", "zdt1", "test problem: "+strings.Join(problems.Names(), ", "))
	f.StringVar(&sampler, "sampler", "nsga2", "sampler: "+strings.Join(samplers.Names(), ", "))
	f.IntVar(&evaluations, "evaluations", 4000, "objective evaluations")
	f.IntVar(&population, "population", 40, "NSGA-II population size")
	f.Uint64Var(&seed, "seed", 0, "random seed")
	f.StringVar(&crossover, "crossover", "uniform", "NSGA-II crossover: uniform or sbx")
	f.BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printSearchBench(w io.Writer, o searchBenchOutput) {
	fmt.Fprintf(w, "problem %s, sampler %s, seed %d, %d evaluations", o.Problem, o.Sampler, o.Seed, o.Evaluations)
	if o.Population > 0 {
		fmt.Fprintf(w, ", population %d", o.Population)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "reference point: %v\n", o.Reference)
	fmt.Fprintf(w, "hypervolume: %.6f (true front %.6f, relative %.4f)\n", o.Hypervolume, o.TrueHypervolume, o.RelativeHypervolume)
	fmt.Fprintf(w, "feasible evaluations: %d of %d; sampler time %.3fs\n", o.FeasibleEvaluations, o.Evaluations, o.SamplerSeconds)
	fmt.Fprintf(w, "final front (%d points):\n", len(o.Front))
	for _, p := range o.Front {
		parts := make([]string, len(p))
		for i, v := range p {
			parts[i] = fmt.Sprintf("%.6f", v)
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(parts, "  "))
	}
}
