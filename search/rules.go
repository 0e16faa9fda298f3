package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Rule is a named cross-parameter condition checked before a trial runs,
// e.g. "max_num_batched_tokens ≥ max_num_seqs". Check returns nil when p
// satisfies the rule, otherwise an error saying why.
type Rule struct {
	Name  string
	Check func(p Params) error
}

// RuleError reports a parameter set that breaks a Rule.
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %q: %v", e.Rule, e.Err) }

// Unwrap returns the rule's own error.
func (e *RuleError) Unwrap() error { return e.Err }

// Space is the searched parameter space: parameters in declaration order and
// the rules every sampled parameter set must satisfy.
type Space struct {
	Params []Param
	Rules  []Rule
	// Canonical, when set, maps a parameter set to the one that behaves
	// identically (a threshold at or above the budget it limits means
	// "off", say), so that equivalent settings are one point: CanonicalKey
	// compares parameter sets through it. It must be deterministic and must
	// not modify its argument. Like rules it is code: a study does not store
	// it.
	Canonical func(Params) Params
}

// CanonicalKey is the Key of p's canonical form: two parameter sets with
// equal CanonicalKeys configure the engine identically, so evaluating
// both wastes a trial.
func (s Space) CanonicalKey(p Params) string {
	if s.Canonical == nil {
		return p.Key()
	}
	return s.Canonical(p).Key()
}

// NewSpace returns a Space over params after validating it.
func NewSpace(params ...Param) (Space, error) {
	s := Space{Params: params}
	return s, s.Validate()
}

// WithRule returns s with one more rule appended.
func (s Space) WithRule(name string, check func(Params) error) Space {
	s.Rules = append(append([]Rule(nil), s.Rules...), Rule{Name: name, Check: check})
	return s
}

// Validate checks every parameter declaration, name uniqueness and rules.
func (s Space) Validate() error {
	if len(s.Params) == 0 {
		return errors.New("search space has no parameters")
	}
	seen := make(map[string]bool, len(s.Params))
	for _, p := range s.Params {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("search space: %w", err)
		}
		if seen[p.Name] {
			return fmt.Errorf("search space: duplicate parameter %q", p.Name)
		}
		seen[p.Name] = true
	}
	for i, r := range s.Rules {
		if r.Name == "" || r.Check == nil {
			return fmt.Errorf("search space: rule %d needs a name and a check", i)
		}
	}
	return nil
}

// Param returns the named parameter.
func (s Space) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Normalize checks that p holds exactly the space's parameters with valid
// values and returns a copy with canonical Go types (see Param.Contains).
// Rules are not checked; use Check for that.
func (s Space) Normalize(p Params) (Params, error) {
	out := make(Params, len(s.Params))
	for _, sp := range s.Params {
		v, ok := p[sp.Name]
		if !ok {
			return nil, fmt.Errorf("parameter %q missing", sp.Name)
		}
		cv, err := sp.Contains(v)
		if err != nil {
			return nil, err
		}
		out[sp.Name] = cv
	}
	if len(p) != len(s.Params) {
		for k := range p {
			if _, ok := s.Param(k); !ok {
				return nil, fmt.Errorf("parameter %q is not in the search space", k)
			}
		}
	}
	return out, nil
}

// Check normalises p and then evaluates every rule in order; the first broken
// rule is returned as a *RuleError.
func (s Space) Check(p Params) (Params, error) {
	np, err := s.Normalize(p)
	if err != nil {
		return nil, err
	}
	for _, r := range s.Rules {
		if err := r.Check(np); err != nil {
			return nil, &RuleError{Rule: r.Name, Err: err}
		}
	}
	return np, nil
}

// DefaultSampleAttempts bounds SampleValid's resampling.
const DefaultSampleAttempts = 1000

// SampleValid asks s for parameters until they pass space.Check, at most
// attempts times (DefaultSampleAttempts when ≤ 0). It returns the normalised
// parameters, or the last rule violation when every attempt broke a rule.
func SampleValid(ctx context.Context, s Sampler, history []Trial, space Space, attempts int) (Params, error) {
	if attempts <= 0 {
		attempts = DefaultSampleAttempts
	}
	var last error
	for i := 0; i < attempts; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := s.Sample(ctx, history, space)
		if err != nil {
			return nil, fmt.Errorf("sample parameters: %w", err)
		}
		np, err := space.Check(p)
		if err == nil {
			return np, nil
		}
		var re *RuleError
		if !errors.As(err, &re) {
			return nil, fmt.Errorf("sampler returned invalid parameters: %w", err)
		}
		last = err
	}
	return nil, fmt.Errorf("no parameter set satisfying the rules after %d attempts: %w", attempts, last)
}

// spaceJSON is the stored form of a Space: rules are code, so only their
// names are kept (for display and compatibility checks).
type spaceJSON struct {
	Params []Param  `json:"params"`
	Rules  []string `json:"rules,omitempty"`
}

// MarshalJSON encodes the parameters and the rule names.
func (s Space) MarshalJSON() ([]byte, error) {
	sj := spaceJSON{Params: s.Params}
	for _, r := range s.Rules {
		sj.Rules = append(sj.Rules, r.Name)
	}
	return json.Marshal(sj)
}

// UnmarshalJSON decodes parameters; rules come back as names whose Check
// always passes (the code that declared them is not stored).
func (s *Space) UnmarshalJSON(b []byte) error {
	var sj spaceJSON
	if err := json.Unmarshal(b, &sj); err != nil {
		return fmt.Errorf("decode search space: %w", err)
	}
	s.Params = sj.Params
	s.Rules = nil
	s.Canonical = nil
	for _, n := range sj.Rules {
		s.Rules = append(s.Rules, Rule{Name: n, Check: func(Params) error { return nil }})
	}
	return nil
}

// DefaultDistinctAttempts bounds SampleDistinct's resampling of canonical
// duplicates.
const DefaultDistinctAttempts = 64

// Evaluated reports whether a trial in state s has run or will run the
// objective at its parameters: a new trial with the same canonical
// parameters would repeat that evaluation. FAIL trials (a crash, a
// timeout) and PRUNED ones are not: trying their parameters again is a
// new measurement.
func (s TrialState) Evaluated() bool {
	switch s {
	case StateComplete, StateInfeasible, StateRunning, StateWaiting:
		return true
	}
	return false
}

// SampleDistinct is SampleValid that also asks again, up to attempts times
// (DefaultDistinctAttempts when ≤ 0), while the candidate is a canonical
// duplicate (Space.CanonicalKey) of a trial of history that was or is being
// evaluated. It returns the candidate and -1, or, when every attempt gave a
// duplicate, the last candidate and the number of the trial it duplicates:
// the caller reuses that trial's result instead of evaluating it again.
func SampleDistinct(ctx context.Context, s Sampler, history []Trial, space Space, attempts int) (Params, int, error) {
	if attempts <= 0 {
		attempts = DefaultDistinctAttempts
	}
	seen := make(map[string]int, len(history))
	for i := range history {
		if history[i].State.Evaluated() {
			k := space.CanonicalKey(history[i].Params)
			if _, dup := seen[k]; !dup {
				seen[k] = history[i].Number
			}
		}
	}
	var p Params
	for i := 0; i < attempts; i++ {
		var err error
		if p, err = SampleValid(ctx, s, history, space, 0); err != nil {
			return nil, -1, err
		}
		n, dup := seen[space.CanonicalKey(p)]
		if !dup {
			return p, -1, nil
		}
		if i == attempts-1 {
			return p, n, nil
		}
	}
	return p, -1, nil
}
