package tpe

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/spoc-project/spoc/search"
)

// Defaults for Options; zero fields take these values.
const (
	// DefaultStartupTrials is the size of the space-filling start (Optuna's
	// n_startup_trials).
	DefaultStartupTrials = 10
	// DefaultCandidates is how many candidates are drawn from l per sample
	// (Optuna's n_ei_candidates).
	DefaultCandidates = 24
	// DefaultGamma is the share of finished trials that are "good";
	// DefaultMaxGood caps their number (Optuna's default_gamma:
	// min(⌈0.1·n⌉, 25)).
	DefaultGamma   = 0.1
	DefaultMaxGood = 25
	// DefaultPriorWeight is the weight of the prior kernel against one
	// trial's kernel.
	DefaultPriorWeight = 1.0
)

// Options configures a Sampler. Zero values select the defaults above.
type Options struct {
	Directions    []search.Direction
	Seed          uint64
	StartupTrials int
	Candidates    int
	Gamma         float64
	MaxGood       int
	PriorWeight   float64
}

// Sampler is the TPE sampler. It is safe for concurrent use and keeps no
// state between samples beyond the attempt counter of search.TrialRand.
type Sampler struct {
	opt Options
	rnd *search.TrialRand

	mu      sync.Mutex
	lastLen int
	attempt int
}

var _ search.Sampler = (*Sampler)(nil)

// New validates opt, fills defaults and returns a Sampler.
func New(opt Options) (*Sampler, error) {
	if len(opt.Directions) == 0 {
		return nil, fmt.Errorf("tpe: no objective directions")
	}
	if opt.StartupTrials == 0 {
		opt.StartupTrials = DefaultStartupTrials
	}
	if opt.Candidates == 0 {
		opt.Candidates = DefaultCandidates
	}
	if opt.Gamma == 0 {
		opt.Gamma = DefaultGamma
	}
	if opt.MaxGood == 0 {
		opt.MaxGood = DefaultMaxGood
	}
	if opt.PriorWeight == 0 {
		opt.PriorWeight = DefaultPriorWeight
	}
	switch {
	case opt.StartupTrials < 1:
		return nil, fmt.Errorf("tpe: startup trials %d < 1", opt.StartupTrials)
	case opt.Candidates < 1:
		return nil, fmt.Errorf("tpe: candidates %d < 1", opt.Candidates)
	case !(opt.Gamma > 0 && opt.Gamma < 1):
		return nil, fmt.Errorf("tpe: gamma %v outside (0, 1)", opt.Gamma)
	case opt.MaxGood < 1:
		return nil, fmt.Errorf("tpe: max good %d < 1", opt.MaxGood)
	case !(opt.PriorWeight > 0):
		return nil, fmt.Errorf("tpe: prior weight %v must be > 0", opt.PriorWeight)
	}
	return &Sampler{opt: opt, rnd: search.NewTrialRand(opt.Seed), lastLen: -1}, nil
}

// Options returns the effective options (defaults filled in).
func (s *Sampler) Options() Options { return s.opt }

// nextAttempt counts the samples drawn from a history of n trials: the
// study asks again after a broken rule or a canonical duplicate.
func (s *Sampler) nextAttempt(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.lastLen {
		s.attempt++
	} else {
		s.lastLen, s.attempt = n, 0
	}
	return s.attempt
}

// Sample proposes one parameter set: a Latin-hypercube point while fewer
// than StartupTrials trials are finished, then the best of Candidates
// draws from the good trials' density by l(x)/g(x).
func (s *Sampler) Sample(ctx context.Context, history []search.Trial, space search.Space) (search.Params, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	attempt := s.nextAttempt(len(history))
	r := s.rnd.Next(len(history))
	obs := s.observations(history, space)
	if obs.finished < s.opt.StartupTrials {
		if attempt == 0 && len(history) < s.opt.StartupTrials {
			return latinPoint(space, s.opt.Seed, s.opt.StartupTrials, len(history)), nil
		}
		return uniform(space, r), nil
	}
	good, bad := s.split(obs)
	l := newParzen(space, good, s.opt.PriorWeight)
	g := newParzen(space, bad, s.opt.PriorWeight)
	seen := evaluatedKeys(history, space)
	var best, fallback search.Params
	bestScore, fallbackScore := math.Inf(-1), math.Inf(-1)
	x := make([]float64, len(space.Params))
	for range s.opt.Candidates {
		l.draw(r, x)
		score := l.logDensity(x) - g.logDensity(x)
		p := toParams(space, x)
		if score > fallbackScore {
			fallback, fallbackScore = p, score
		}
		if score <= bestScore {
			continue
		}
		if _, err := space.Check(p); err != nil {
			continue
		}
		if seen[space.CanonicalKey(p)] {
			continue
		}
		best, bestScore = p, score
	}
	if best == nil {
		// Every candidate broke a rule or repeats a trial; the study asks
		// again (with a new random stream) or reuses the earlier result.
		return fallback, nil
	}
	return best, nil
}

// evaluatedKeys are the canonical keys of the trials that ran or run.
func evaluatedKeys(history []search.Trial, space search.Space) map[string]bool {
	seen := make(map[string]bool, len(history))
	for i := range history {
		if history[i].State.Evaluated() {
			seen[space.CanonicalKey(history[i].Params)] = true
		}
	}
	return seen
}

func uniform(space search.Space, r *rand.Rand) search.Params {
	p := make(search.Params, len(space.Params))
	for _, sp := range space.Params {
		p[sp.Name] = sp.Uniform(r)
	}
	return p
}

// latinPoint is point k of an n-point Latin hypercube drawn from seed
// alone: numeric parameter j takes stratum perm_j[k] of n equal strata of
// its internal range (a uniform position inside it), categorical parameter
// j takes choice perm_j[k] mod its number of choices, so the design covers
// every choice about equally. Points past n (seeds made the history
// longer) wrap around.
func latinPoint(space search.Space, seed uint64, n, k int) search.Params {
	r := rand.New(rand.NewPCG(seed, 0x1a71_4b5c_0de5_1995))
	k %= n
	p := make(search.Params, len(space.Params))
	for _, sp := range space.Params {
		perm := r.Perm(n)
		offsets := make([]float64, n)
		for i := range offsets {
			offsets[i] = r.Float64()
		}
		if sp.Kind == search.KindCategorical {
			p[sp.Name] = sp.Choices[perm[k]%len(sp.Choices)]
			continue
		}
		lo, hi := sp.Bounds()
		u := (float64(perm[k]) + offsets[k]) / float64(n)
		p[sp.Name] = sp.FromInternal(lo + u*(hi-lo))
	}
	return p
}

// toParams maps a point in internal coordinates to valid parameters.
func toParams(space search.Space, x []float64) search.Params {
	p := make(search.Params, len(space.Params))
	for j, sp := range space.Params {
		p[sp.Name] = sp.FromInternal(x[j])
	}
	return p
}
