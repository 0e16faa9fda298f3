package nsga2

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/spoc-project/spoc/search"
)

// Crossover names a crossover operator.
type Crossover string

// Crossover operators.
const (
	// Uniform takes each parameter from either parent with probability
	// SwappingProb (Optuna's default).
	Uniform Crossover = "uniform"
	// SBX is simulated binary crossover on numeric parameters (internal,
	// log-transformed coordinates); categoricals are inherited uniformly.
	SBX Crossover = "sbx"
)

// Defaults for Options; zero fields take these values.
const (
	DefaultPopulationSize = 50
	DefaultCrossoverProb  = 0.9
	DefaultSwappingProb   = 0.5
	DefaultSBXEta         = 15.0
	DefaultMutationEta    = 5.0
)

// Options configures a Sampler. Zero values select the defaults above;
// MutationProb 0 means 1/number-of-parameters.
type Options struct {
	PopulationSize int
	Directions     []search.Direction
	Crossover      Crossover
	CrossoverProb  float64
	SwappingProb   float64
	SBXEta         float64
	MutationProb   float64
	MutationEta    float64
	Seed           uint64
}

// Sampler is the NSGA-II sampler. It is safe for concurrent use; use one
// Sampler per study (it caches each generation's parent population).
type Sampler struct {
	opt Options
	rnd *search.TrialRand

	mu      sync.Mutex
	parents map[int][]member // generation → parent population
	keys    map[int]string   // trial number → Params.Key()
}

var (
	_ search.Sampler           = (*Sampler)(nil)
	_ search.GenerationSampler = (*Sampler)(nil)
)

// New validates opt, fills defaults and returns a Sampler.
func New(opt Options) (*Sampler, error) {
	if len(opt.Directions) == 0 {
		return nil, fmt.Errorf("nsga2: no objective directions")
	}
	if opt.PopulationSize == 0 {
		opt.PopulationSize = DefaultPopulationSize
	}
	if opt.PopulationSize < 2 {
		return nil, fmt.Errorf("nsga2: population size %d < 2", opt.PopulationSize)
	}
	switch opt.Crossover {
	case "":
		opt.Crossover = Uniform
	case Uniform, SBX:
	default:
		return nil, fmt.Errorf("nsga2: unknown crossover %q (want uniform or sbx)", opt.Crossover)
	}
	if opt.CrossoverProb == 0 {
		opt.CrossoverProb = DefaultCrossoverProb
	}
	if opt.SwappingProb == 0 {
		opt.SwappingProb = DefaultSwappingProb
	}
	if opt.SBXEta == 0 {
		opt.SBXEta = DefaultSBXEta
	}
	if opt.MutationEta == 0 {
		opt.MutationEta = DefaultMutationEta
	}
	for name, p := range map[string]float64{"crossover": opt.CrossoverProb, "swapping": opt.SwappingProb, "mutation": opt.MutationProb} {
		if p < 0 || p > 1 {
			return nil, fmt.Errorf("nsga2: %s probability %v outside [0, 1]", name, p)
		}
	}
	if opt.SBXEta < 0 || opt.MutationEta < 0 {
		return nil, fmt.Errorf("nsga2: distribution indexes must be ≥ 0")
	}
	return &Sampler{opt: opt, rnd: search.NewTrialRand(opt.Seed), parents: map[int][]member{}, keys: map[int]string{}}, nil
}

// Options returns the effective options (defaults filled in).
func (s *Sampler) Options() Options { return s.opt }

// Generation returns the generation a trial sampled now belongs to: the
// latest generation in history, or the next one once PopulationSize trials
// of the latest are COMPLETE.
func (s *Sampler) Generation(history []search.Trial) int {
	latest, complete := 0, 0
	for i := range history {
		t := &history[i]
		switch {
		case t.Generation > latest:
			latest, complete = t.Generation, 0
			if t.State == search.StateComplete {
				complete = 1
			}
		case t.Generation == latest && t.State == search.StateComplete:
			complete++
		}
	}
	if complete >= s.opt.PopulationSize {
		return latest + 1
	}
	return latest
}

// Sample proposes one child for the current generation, or a random point
// in generation 0.
func (s *Sampler) Sample(ctx context.Context, history []search.Trial, space search.Space) (search.Params, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.rnd.Next(len(history))
	gen := s.Generation(history)
	if gen == 0 {
		p := make(search.Params, len(space.Params))
		for _, sp := range space.Params {
			p[sp.Name] = sp.Uniform(r)
		}
		return p, nil
	}
	byNumber := make(map[int]*search.Trial, len(history))
	for i := range history {
		byNumber[history[i].Number] = &history[i]
	}
	parents, err := s.parentPopulation(gen, history, byNumber)
	if err != nil {
		return nil, err
	}
	if len(parents) == 0 {
		return nil, fmt.Errorf("nsga2: generation %d has an empty parent population", gen)
	}
	// Re-evaluating a parameter set wastes a whole trial (minutes of GPU
	// time for an engine), so a child identical to a parent or to a trial
	// of the current generation is bred again, a bounded number of times.
	seen := make(map[string]bool, 2*len(parents))
	for _, m := range parents {
		seen[s.key(byNumber[m.number])] = true
	}
	for i := range history {
		if history[i].Generation == gen {
			seen[s.key(&history[i])] = true
		}
	}
	var p search.Params
	for range maxRebreed {
		a := tournament(parents, r)
		b := tournament(parents, r)
		p = s.child(space, byNumber[a.number].Params, byNumber[b.number].Params, r)
		if !seen[p.Key()] {
			break
		}
	}
	return p, nil
}

// key returns t's parameter key, cached by trial number: a trial's
// parameters never change once it exists.
func (s *Sampler) key(t *search.Trial) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[t.Number]
	if !ok {
		k = t.Params.Key()
		s.keys[t.Number] = k
	}
	return k
}

// maxRebreed bounds the attempts at a child not seen in the generation.
const maxRebreed = 16

// parentPopulation returns (and caches) the parent population of gen.
func (s *Sampler) parentPopulation(gen int, history []search.Trial, byNumber map[int]*search.Trial) ([]member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Find the latest cached generation at or below gen, then build forward.
	start := gen
	for start > 0 {
		if _, ok := s.parents[start]; ok {
			break
		}
		start--
	}
	if start == gen {
		return s.parents[gen], nil
	}
	for g := start + 1; g <= gen; g++ {
		var cand []int
		for _, m := range s.parents[g-1] {
			cand = append(cand, m.number)
		}
		cand = append(cand, s.firstComplete(g-1, history)...)
		var err error
		s.parents[g], err = s.elite(cand, byNumber)
		if err != nil {
			return nil, fmt.Errorf("nsga2: select parents of generation %d: %w", g, err)
		}
	}
	return s.parents[gen], nil
}

// firstComplete returns the first PopulationSize COMPLETE trials of gen by
// completion time (then number): the trials whose completion closed the
// generation, identical for every worker reading the same study.
func (s *Sampler) firstComplete(gen int, history []search.Trial) []int {
	var done []*search.Trial
	for i := range history {
		t := &history[i]
		if t.Generation == gen && t.State == search.StateComplete {
			done = append(done, t)
		}
	}
	sort.SliceStable(done, func(i, j int) bool {
		if !done[i].Complete.Equal(done[j].Complete) {
			return done[i].Complete.Before(done[j].Complete)
		}
		return done[i].Number < done[j].Number
	})
	if len(done) > s.opt.PopulationSize {
		done = done[:s.opt.PopulationSize]
	}
	out := make([]int, len(done))
	for i, t := range done {
		out[i] = t.Number
	}
	return out
}
