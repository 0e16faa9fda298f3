package tune

import (
	"errors"
	"fmt"
	"math"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/samplers"
	"github.com/spoc-project/spoc/vllm"
)

// Space converts the configured search space to a search.Space and adds the
// cross-parameter rules vLLM itself enforces at start-up, so that the
// sampler proposes again instead of spending a trial on a server that
// refuses to start:
//
//   - max-num-batched-tokens ≥ max-num-seqs (every running sequence must be
//     able to decode one token per step);
//   - with chunked prefill off, max-num-batched-tokens ≥ the context limit
//     (a whole prompt must fit one step).
//
// base holds the flags every trial gets (engine.BaseParams), consulted for
// flags the space does not vary; maxModelLen is the context limit.
func Space(params []search.ParamSpec, base search.Params, maxModelLen int) (search.Space, error) {
	ps := make([]search.Param, 0, len(params))
	for i, q := range params {
		p := search.Param{Name: q.Name, Low: q.Low, High: q.High, Log: q.Log, Step: q.Step}
		switch q.Type {
		case "int":
			p.Kind = search.KindInt
			if p.Step == 0 {
				p.Step = 1
			}
		case "float":
			p.Kind = search.KindFloat
		case "bool":
			p.Kind = search.KindCategorical
			p.Choices = []any{false, true}
			if len(q.Choices) > 0 {
				p.Choices = nil
				for _, c := range q.Choices {
					b, ok := c.(bool)
					if !ok {
						return search.Space{}, fmt.Errorf("search.space[%d] (%s): bool parameter choice %v is not true or false", i, q.Name, c)
					}
					p.Choices = append(p.Choices, b)
				}
			}
		case "categorical":
			p.Kind = search.KindCategorical
			for _, c := range q.Choices {
				p.Choices = append(p.Choices, canonicalChoice(c))
			}
		default:
			return search.Space{}, fmt.Errorf("search.space[%d] (%s): unknown type %q", i, q.Name, q.Type)
		}
		if err := p.Validate(); err != nil {
			return search.Space{}, fmt.Errorf("search.space[%d]: %w", i, err)
		}
		ps = append(ps, p)
	}
	s, err := search.NewSpace(ps...)
	if err != nil {
		return search.Space{}, err
	}
	// A flag the space does not vary takes its fixed value from base; a
	// flag set nowhere takes vLLM's default, which passes vLLM's checks.
	value := func(p search.Params, name string) (int, bool) {
		if _, ok := p[name]; ok {
			return p.Int(name), true
		}
		for k := range base {
			if vllm.FlagName(k) == name {
				return base.Int(k), true
			}
		}
		return 0, false
	}
	// Equivalent flag sets are one point of the study (vllm.Canonical):
	// a canonical duplicate reuses its twin's result instead of a trial.
	s.Canonical = func(p search.Params) search.Params { return search.Params(vllm.Canonical(p, base)) }
	has := func(n string) bool { _, ok := s.Param(n); return ok }
	if has("max-num-batched-tokens") || has("max-num-seqs") {
		s = s.WithRule("max-num-batched-tokens >= max-num-seqs", func(p search.Params) error {
			b, okb := value(p, "max-num-batched-tokens")
			n, okn := value(p, "max-num-seqs")
			if okb && okn && b < n {
				return fmt.Errorf("max-num-batched-tokens %d < max-num-seqs %d", b, n)
			}
			return nil
		})
	}
	if has("enable-chunked-prefill") && maxModelLen > 0 {
		s = s.WithRule("chunked prefill off needs max-num-batched-tokens >= max-model-len", func(p search.Params) error {
			if on, ok := p["enable-chunked-prefill"].(bool); !ok || on {
				return nil
			}
			if b, ok := value(p, "max-num-batched-tokens"); ok && b < maxModelLen {
				return fmt.Errorf("chunked prefill off with max-num-batched-tokens %d < max-model-len %d", b, maxModelLen)
			}
			return nil
		})
	}
	return s, nil
}

// canonicalChoice turns YAML-decoded numbers into the types search.Param
// accepts: whole numbers become int.
func canonicalChoice(c any) any {
	switch v := c.(type) {
	case int64:
		return int(v)
	case uint64:
		return int(v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int(v)
		}
	}
	return c
}

// Directions returns the study's objective directions.
func Directions(objs []search.ObjectiveSpec) ([]search.Direction, error) {
	if len(objs) == 0 {
		return nil, errors.New("search.objectives: at least one objective is needed")
	}
	dirs := make([]search.Direction, len(objs))
	for i, o := range objs {
		d, err := search.ParseDirection(o.Direction)
		if err != nil {
			return nil, fmt.Errorf("search.objectives[%d].direction: %w", i, err)
		}
		dirs[i] = d
	}
	return dirs, nil
}

// SamplerAuto picks the sampler by the study's budget: SamplerLowBudget
// up to AutoMaxTrials trials, NSGA-II beyond.
const SamplerAuto = "auto"

// AutoMaxTrials is the largest budget for which SamplerAuto picks TPE: up
// to there a model-based sampler finds a better front than an evolutionary
// one, whose random first generation takes a large share of a small
// budget (docs/search.md has the measurements).
const AutoMaxTrials = 100

// ResolveSampler returns the sampler name a study of spec runs: spec's,
// or for SamplerAuto (and an empty name) the one a study stored under the
// same name already uses (stored, "" for a new study), else tpe up to
// AutoMaxTrials trials and nsga2 beyond.
func ResolveSampler(spec Spec, stored string) string {
	if spec.Sampler != "" && spec.Sampler != SamplerAuto {
		return spec.Sampler
	}
	if stored != "" {
		return stored
	}
	if spec.Trials <= AutoMaxTrials {
		return "tpe"
	}
	return "nsga2"
}

// Sampler builds the sampler spec names (ResolveSampler for auto) from the
// one name→constructor registry of samplers, search/samplers.
func Sampler(s Spec, dirs []search.Direction) (search.Sampler, error) {
	smp, err := samplers.New(ResolveSampler(s, ""), samplers.Config{
		Directions:     dirs,
		Seed:           s.Seed,
		PopulationSize: s.Population,
		CrossoverProb:  s.CrossoverProb,
		MutationProb:   s.MutationProb,
	})
	if err != nil {
		return nil, fmt.Errorf("search.sampler: %w", err)
	}
	return smp, nil
}

// SamplerConfig is what the study stores about the sampler, for display:
// NSGA-II's settings when the study runs NSGA-II, nothing for another
// sampler, which ignores them (a TPE study showing a population would
// say it used one).
func SamplerConfig(s Spec) map[string]any {
	if ResolveSampler(s, "") != "nsga2" {
		return map[string]any{}
	}
	return map[string]any{
		"population":     s.Population,
		"crossover_prob": s.CrossoverProb,
		"mutation_prob":  s.MutationProb,
	}
}
