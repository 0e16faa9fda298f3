package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrInfeasible is returned (possibly wrapped) by an Objective when the
// parameters cannot be evaluated at all — a server that does not start, runs
// out of memory, or rejects the configuration. The trial is recorded as
// StateInfeasible and never enters a sampler's population. Any other error
// marks the trial StateFail.
var ErrInfeasible = errors.New("infeasible parameters")

// Objective evaluates one parameter set. It returns one value per study
// direction and, optionally, constraint values where c ≤ 0 means satisfied
// (for an SLA: measured p95 TTFT minus the threshold). The trial is an
// explicit argument (goptuna's objective(trial)): its parameters, number and
// artefact folder, and the attributes the objective records with it.
type Objective func(ctx context.Context, t *TrialContext) (values, constraints []float64, err error)

// Sampler proposes the next parameter set from the study's history (every
// trial so far, in number order, whatever its state). Implementations are
// safe for concurrent use and deterministic for a given seed and history.
type Sampler interface {
	Sample(ctx context.Context, history []Trial, space Space) (Params, error)
}

// GenerationSampler is implemented by samplers that group trials into
// generations (NSGA-II). The study calls Generation with the same history
// it passes to Sample and stores the result in Trial.Generation, so that
// several workers sharing one study agree on generation membership.
type GenerationSampler interface {
	Sampler
	Generation(history []Trial) int
}

// GenerationOf returns the generation a new trial sampled by s from history
// belongs to: s.Generation when s is a GenerationSampler, 0 otherwise.
func GenerationOf(s Sampler, history []Trial) int {
	if g, ok := s.(GenerationSampler); ok {
		return g.Generation(history)
	}
	return 0
}

// Direction says whether an objective is minimised or maximised.
type Direction int

// Objective directions.
const (
	Minimize Direction = iota
	Maximize
)

// String returns "minimize" or "maximize" (Optuna's spelling in lower case).
func (d Direction) String() string {
	switch d {
	case Minimize:
		return "minimize"
	case Maximize:
		return "maximize"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// MarshalText encodes d as its String form.
func (d Direction) MarshalText() ([]byte, error) {
	if d != Minimize && d != Maximize {
		return nil, fmt.Errorf("encode direction: invalid value %d", int(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText accepts "minimize"/"maximize" in any case (also "min"/"max").
func (d *Direction) UnmarshalText(b []byte) error {
	v, err := ParseDirection(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDirection parses "minimize", "maximize", "min" or "max" (any case).
func ParseDirection(s string) (Direction, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "minimize", "min":
		return Minimize, nil
	case "maximize", "max":
		return Maximize, nil
	}
	return 0, fmt.Errorf("parse direction %q: want minimize or maximize", s)
}

// TrialState is the lifecycle state of a trial; names match Optuna's
// TrialState where Optuna has one, so exports load into Optuna tooling.
type TrialState string

// Trial states. WAITING trials are queued (for example a stale trial's
// re-run) and claimed by the next worker; RUNNING trials are being
// evaluated; the other states are final.
const (
	StateWaiting    TrialState = "WAITING"
	StateRunning    TrialState = "RUNNING"
	StateComplete   TrialState = "COMPLETE"
	StateFail       TrialState = "FAIL"
	StateInfeasible TrialState = "INFEASIBLE"
	StatePruned     TrialState = "PRUNED"
)

// Valid reports whether s is one of the defined states.
func (s TrialState) Valid() bool {
	switch s {
	case StateWaiting, StateRunning, StateComplete, StateFail, StateInfeasible, StatePruned:
		return true
	}
	return false
}

// Finished reports whether s is final (no longer waiting or running).
func (s TrialState) Finished() bool {
	return s != StateWaiting && s != StateRunning && s.Valid()
}

// Trial is one evaluation of the objective at one parameter set.
type Trial struct {
	// Number is the trial's 0-based position in its study.
	Number int `json:"number"`
	// Params are the evaluated (or, while WAITING/RUNNING, the to-be-evaluated)
	// parameters.
	Params Params `json:"params"`
	// Values holds one objective value per study direction; set when COMPLETE.
	Values []float64 `json:"values,omitempty"`
	// Constraints are constraint values; c ≤ 0 is satisfied. Empty means no
	// constraints (always feasible).
	Constraints []float64  `json:"constraints,omitempty"`
	State       TrialState `json:"state"`
	// Start and Complete bound the evaluation; Complete is zero until final.
	Start    time.Time `json:"datetime_start,omitzero"`
	Complete time.Time `json:"datetime_complete,omitzero"`
	// UserAttrs are free-form attributes set by the objective (JSON values).
	UserAttrs map[string]any `json:"user_attrs,omitempty"`
	// SystemAttrs are attributes recorded by the study machinery rather than
	// the objective: "fail_reason", "worker", "retry_of" (the trial this one
	// re-runs), "requeued_as" (the trial that re-runs this one).
	SystemAttrs map[string]any `json:"system_attrs,omitempty"`
	// Artifacts is the directory holding the trial's files (logs, records);
	// empty when the study has no artefact root.
	Artifacts string `json:"artifacts,omitempty"`
	// Generation is the sampler generation the trial belongs to (NSGA-II);
	// 0 for samplers without generations.
	Generation int `json:"generation"`
}

// Feasible reports whether every constraint is satisfied (≤ 0).
func (t *Trial) Feasible() bool { return Violation(t.Constraints) == 0 }

// Duration is Complete - Start, or 0 while the trial is not finished.
func (t *Trial) Duration() time.Duration {
	if t.Complete.IsZero() || t.Start.IsZero() {
		return 0
	}
	return t.Complete.Sub(t.Start)
}

// Violation is the total constraint violation: the sum of the positive
// constraint values. 0 means feasible.
func Violation(constraints []float64) float64 {
	var v float64
	for _, c := range constraints {
		if c > 0 {
			v += c
		}
	}
	return v
}

// TrialContext is what an Objective can see and record about the trial it
// evaluates. The study loop passes one to the Objective.
type TrialContext struct {
	// Params are the trial's parameters.
	Params Params
	// Number and Generation identify the trial in its study.
	Number     int
	Generation int
	// Artifacts is the trial's artefact directory ("" if none). The study
	// creates it before the objective runs.
	Artifacts string

	mu    sync.Mutex
	attrs map[string]any
}

// SetUserAttr records a user attribute (stored with the trial when it ends).
// v must be JSON-encodable.
func (tc *TrialContext) SetUserAttr(key string, v any) {
	if tc == nil {
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.attrs == nil {
		tc.attrs = make(map[string]any)
	}
	tc.attrs[key] = v
}

// UserAttrs returns a copy of the attributes recorded so far.
func (tc *TrialContext) UserAttrs() map[string]any {
	if tc == nil {
		return nil
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.attrs) == 0 {
		return nil
	}
	out := make(map[string]any, len(tc.attrs))
	for k, v := range tc.attrs {
		out[k] = v
	}
	return out
}
