package tune

import (
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/vllm"
)

// Spec is what a study searches and how, resolved before the study starts:
// the space and objectives, the sampler and its settings, where the study is
// stored and how many trials it runs, the load every trial is evaluated at,
// the flags every trial's server gets and the SLA whose clauses are the
// constraints. It is a plain value; Run does not change it.
type Spec struct {
	// Space lists the searched engine flags.
	Space []search.ParamSpec
	// Objectives are what the study optimises, in order.
	Objectives []search.ObjectiveSpec
	// Sampler is auto (also when empty: ResolveSampler), tpe, nsga2,
	// random or grid.
	Sampler string
	// Population, CrossoverProb and MutationProb configure NSGA-II;
	// MutationProb 0 means 1/number of parameters.
	Population    int
	CrossoverProb float64
	MutationProb  float64
	// Seed seeds the sampler.
	Seed uint64
	// Parallel is how many trials this worker runs at once, each on its
	// own server (Options.Workers); 0 and 1 mean one at a time.
	Parallel int
	// Trials is the study's budget, all workers together.
	Trials int
	// StopAfterSameFailures stops the study when that many trials in a
	// row failed with the same engine failure (same reason, same log line
	// but for its numbers): whatever the flags, the cause is the server's
	// setup, and the rest of the budget would fail too. 0: never.
	StopAfterSameFailures int
	// Storage is the study database (a SQLite path or postgres:// URL) and
	// Study the study's name in it.
	Storage string
	Study   string
	// Users is the concurrent user count every trial is evaluated at; it
	// must be resolved (at least 1) before Run.
	Users int
	// BaseParams are the flags every trial's server gets before the
	// sampled ones (engine.BaseParams); flags the space does not vary are
	// read from it for vLLM's start-up rules.
	BaseParams search.Params
	// Defaults are the values the engine gives the flags its command
	// line leaves out (the flavor's: engine.Flavor.Defaults), and
	// DefaultsName says whose they are; the study's second seed is them.
	// Both zero mean vLLM's (vllm.Defaults), the default flavor's; a
	// name with no values (a generic server that declares none) means
	// there are none, and the study has no defaults seed.
	Defaults     map[string]any
	DefaultsName string
	// MaxModelLen is the context limit in tokens.
	MaxModelLen int
	// SLA gives the constraints of every trial.
	SLA result.SLA
	// Fingerprint names what the study's results depend on beyond its
	// space and objectives (model, GPU, GPU count, SLA, a hash of the
	// workload, ...). Every trial stores it; a study is not resumed with
	// another one, since its trials would not be comparable.
	Fingerprint map[string]string
}

// EngineDefaults returns the engine's defaults and their name, vLLM's
// when the spec names none.
func (s Spec) EngineDefaults() (map[string]any, string) {
	if s.DefaultsName == "" && s.Defaults == nil {
		return vllm.Defaults(), "vLLM defaults"
	}
	return s.Defaults, s.DefaultsName
}
