package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/problems"
	"github.com/spoc-project/spoc/search/samplers"
	"github.com/spoc-project/spoc/tune"
)

func init() { register(newSearchCmd) }

func newSearchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Exercise spoc's multi-objective samplers on standard test problems",
	}
	cmd.AddCommand(newSearchBenchCmd(), newSearchObjectiveCmd())
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

// objectiveHeader is the first line spoc search objective prints: what
// the study searches, so that another optimiser can declare the same space.
type objectiveHeader struct {
	Study      string                 `json:"study"`
	Users      int                    `json:"users"`
	Directions []search.Direction     `json:"directions"`
	Objectives []search.ObjectiveSpec `json:"objectives"`
	Space      search.Space           `json:"space"`
	Dropped    []tune.Dropped         `json:"dropped,omitempty"`
	Seeds      []tune.Seed            `json:"seeds,omitempty"`
}

// objectiveReply answers one parameter set.
type objectiveReply struct {
	State       search.TrialState `json:"state"`
	Values      []float64         `json:"values,omitempty"`
	Constraints []float64         `json:"constraints,omitempty"`
	Error       string            `json:"error,omitempty"`
}

// objectiveKeys are the flags of spoc search objective that set
// configuration keys.
var objectiveKeys = keyFlags{{flag: "users", key: "search.users"}}

func newSearchObjectiveCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "objective",
		Short: "Serve the study's objective over stdin/stdout, for other optimisers (bench/)",
		Long: `Objective evaluates the study the configuration describes for parameter sets
read from stdin, one JSON object per line ({"params": {...}}), and answers each
with one JSON line: {"state": "COMPLETE"|"INFEASIBLE"|"FAIL", "values": [...],
"constraints": [...], "error": "..."}. It is the objective spoc tune evaluates
(same space after pruning, same flags, load, SLA constraints), so that an
external optimiser (Optuna in bench/study_compare.py) can be compared with
spoc's samplers on it. The first line printed describes the study: its load,
directions, objectives, space (rules by name) and dropped dimensions. A
parameter set that breaks a rule of the space is answered FAIL without a run.
With --users 0 the load is the ceiling of engine.params found by the same
baseline sweep spoc tune runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSearchObjective(cmd, configPath) },
	}
	f := cmd.Flags()
	f.StringVarP(&configPath, "config", "c", "", "configuration file (default: the reference case)")
	f.Int("users", 0, "load of every evaluation (0: the ceiling of engine.params by a baseline sweep)")
	return cmd
}

func runSearchObjective(cmd *cobra.Command, configPath string) error {
	cfg, err := loadConfigWith(configPath, cmd.Flags(), objectiveKeys)
	if err != nil {
		return err
	}
	logger := stderrLogger(cmd.ErrOrStderr())
	setup, err := cfg.Setup(config.SetupOptions{Logger: logger})
	if err != nil {
		return usageError(err)
	}
	if !engine.Reconfigurable(setup.Launcher) {
		return usageError(capacity.ErrNotReconfigurable)
	}
	spec := setup.Search
	plan, err := tune.NewPlan(spec)
	if err != nil {
		return usageError(err)
	}
	ctx := cmd.Context()
	ev, err := capacity.NewEvaluator(setup.Setup, logger)
	if err != nil {
		return err
	}
	defer ev.Close(ctx)
	if spec.Users == 0 {
		res, err := capacity.BaselineSweep(ctx, ev, nil)
		if err != nil {
			return fmt.Errorf("baseline sweep: %w", err)
		}
		spec.Users = max(res.Ceiling, 1)
	}
	objective := plan.Objective(spec, tune.Options{
		Evaluate: ev.TuneEvaluator(setup.Windows.Tune.At(spec.Users)),
		Capacity: ev.CapacityFunc(),
	})
	out := json.NewEncoder(cmd.OutOrStdout())
	if err := out.Encode(objectiveHeader{Study: spec.Study, Users: spec.Users, Directions: plan.Directions,
		Objectives: plan.Objectives, Space: plan.Space, Dropped: plan.Dropped, Seeds: plan.Seeds}); err != nil {
		return err
	}
	return answerObjective(cmd, plan, objective, out)
}

// answerObjective answers every parameter set read from stdin, one JSON
// line each.
func answerObjective(cmd *cobra.Command, plan *tune.Plan, objective search.Objective, out *json.Encoder) error {
	in := bufio.NewScanner(cmd.InOrStdin())
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 0; in.Scan(); n++ {
		if strings.TrimSpace(in.Text()) == "" {
			continue
		}
		var req struct {
			Params search.Params `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("stdin line %d: %w", n+1, err)
		}
		if err := out.Encode(evaluateOne(cmd, plan, objective, req.Params, n)); err != nil {
			return err
		}
	}
	return in.Err()
}

// evaluateOne answers one parameter set as the study would record it.
func evaluateOne(cmd *cobra.Command, plan *tune.Plan, objective search.Objective, p search.Params, n int) objectiveReply {
	np, err := plan.Space.Check(p)
	if err != nil {
		return objectiveReply{State: search.StateFail, Error: err.Error()}
	}
	values, cons, err := objective(cmd.Context(), &search.TrialContext{Params: np, Number: n})
	switch {
	case errors.Is(err, search.ErrInfeasible):
		return objectiveReply{State: search.StateInfeasible, Error: err.Error()}
	case err != nil:
		return objectiveReply{State: search.StateFail, Error: err.Error()}
	}
	return objectiveReply{State: search.StateComplete, Values: values, Constraints: cons}
}
