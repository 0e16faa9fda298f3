package tune

import (
	"fmt"
	"strings"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/vllm"
)

// Plan is the search a Spec describes.
type Plan struct {
	Space      search.Space
	Directions []search.Direction
	Sampler    search.Sampler
	Objectives []search.ObjectiveSpec
	// Dropped are the configured dimensions Prune removed; every trial
	// runs with their one value (Fixed).
	Dropped []Dropped
	// Fixed holds the flags of Dropped with their values; the objective
	// adds them to every trial's flags.
	Fixed search.Params
	// Seeds are evaluated first in a new study (trial 0 is the configured
	// engine.params when the space can hold them); SeedNotes say which
	// were left out and why.
	Seeds     []Seed
	SeedNotes []string
}

// Notes are the lines a study prints before its first trial: each dropped
// dimension with its reason, each seed and each left-out seed.
func (p *Plan) Notes() []string {
	var out []string
	for _, d := range p.Dropped {
		out = append(out, fmt.Sprintf("search.space: %s dropped, every trial runs with %v: %s", d.Name, d.Value, d.Reason))
	}
	for i, sd := range p.Seeds {
		flags := make([]string, 0, len(p.Space.Params))
		for _, sp := range p.Space.Params {
			flags = append(flags, fmt.Sprintf("%s=%v", sp.Name, sd.Params[sp.Name]))
		}
		out = append(out, fmt.Sprintf("trial %d is %s: %s", i, sd.Name, strings.Join(flags, " ")))
	}
	return append(out, p.SeedNotes...)
}

// NewPlan builds the space (with vLLM's start-up rules, without the
// dimensions Prune drops), directions, sampler and seeds of spec.
func NewPlan(spec Spec) (*Plan, error) {
	kept, dropped := Prune(spec.Space, spec.BaseParams, spec.MaxModelLen)
	if len(kept) == 0 {
		return nil, fmt.Errorf("search.space: nothing left to search: %s", droppedText(dropped))
	}
	space, err := Space(kept, spec.BaseParams, spec.MaxModelLen)
	if err != nil {
		return nil, err
	}
	fixed := search.Params{}
	for _, d := range dropped {
		fixed[d.Name] = d.Value
	}
	defaults, name := spec.EngineDefaults()
	seeds, notes := Seeds(space, vllm.Merge(spec.BaseParams, fixed), defaults, name)
	dirs, err := Directions(spec.Objectives)
	if err != nil {
		return nil, err
	}
	s, err := Sampler(spec, dirs)
	if err != nil {
		return nil, err
	}
	return &Plan{Space: space, Directions: dirs, Sampler: s, Objectives: spec.Objectives,
		Dropped: dropped, Fixed: fixed, Seeds: seeds, SeedNotes: notes}, nil
}

func droppedText(ds []Dropped) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Name + " (" + d.Reason + ")"
	}
	return strings.Join(parts, "; ")
}
