package capacity

import (
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
)

// TuneSpec is the study cfg describes: its search section, the flags every
// trial gets (engine.BaseParams of the engine section), the context limit
// and the SLA. It belongs in config, next to the schema; it lives here until
// engine stops importing config, because config importing tune (which
// imports engine) would be an import cycle.
func TuneSpec(cfg *config.Config) tune.Spec {
	s := cfg.Search
	return tune.Spec{
		Space:         s.Space,
		Objectives:    s.Objectives,
		Sampler:       s.Sampler,
		Population:    s.Population,
		CrossoverProb: s.CrossoverProb,
		MutationProb:  s.MutationProb,
		Seed:          s.Seed,
		Trials:        s.Trials,
		Storage:       s.Storage,
		Study:         s.Study,
		Users:         s.Users,
		BaseParams:    search.Params(engine.BaseParams(cfg.Engine)),
		MaxModelLen:   cfg.Engine.MaxModelLen,
		SLA:           cfg.SLA.Result(),
	}
}
