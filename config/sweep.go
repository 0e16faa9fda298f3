package config

import "fmt"

// Sweep configures the capacity sweep.
type Sweep struct {
	Users              []int    `yaml:"users,omitempty" doc:"Coarse grid of user counts; empty doubles from start until the SLA fails or max is reached."`
	Start              int      `yaml:"start" doc:"First user count of the automatic grid."`
	Max                int      `yaml:"max" doc:"Largest user count tried."`
	ResolutionUsers    int      `yaml:"resolution_users" doc:"Bisection stops when passing and failing counts are this close (or resolution_fraction of the passing count, whichever is larger)."`
	ResolutionFraction float64  `yaml:"resolution_fraction" doc:"Relative bisection resolution."`
	Repeats            int      `yaml:"repeats" doc:"Runs per user count, each with its own workload seed (workload.seed + repeat); a count passes when every repeat passes."`
	Precision          Share    `yaml:"precision" doc:"The capacity's precision target: its 95 % confidence interval's half-width as a share of the estimate (10% or 0.10). After the walk brackets the capacity, runs on fresh workload seeds are spent around it until the interval is this narrow or max_runs is spent (docs/capacity.md, Precision). 0 turns the estimate off: the walk's ceiling with the seed interval of sweep.seeds."`
	MinRuns            int      `yaml:"min_runs" doc:"Fresh-seed runs the estimate always makes, however precise it looks (a few runs can look precise by chance); at least 3."`
	MaxRuns            int      `yaml:"max_runs" doc:"Most fresh-seed runs the estimate makes: with the sweep's windows this bounds the engine time a precision target may take (spoc plan --estimate gives the range)."`
	Seeds              int      `yaml:"seeds" doc:"Only with precision: 0 — workload seeds the walk's ceiling is measured with: each other seed finds its own ceiling starting from the first one's, and their spread gives the ceiling's 95 % prediction interval (docs/capacity.md). 1 states no interval."`
	Duration           Duration `yaml:"duration" doc:"Measured window per level; 0 uses run.duration."`
	Warmup             Duration `yaml:"warmup" doc:"Warm-up per level; 0 uses run.warmup."`
	TopK               int      `yaml:"top_k" doc:"spoc plan: feasible Pareto-front members given a sweep (the sweep's windows, one workload seed) before the best is chosen."`
	Choose             string   `yaml:"choose" doc:"spoc plan: how to pick among the candidates' sweeps: highest-ceiling (most users within the SLA), or max-throughput (most output tokens/s at its ceiling). Ties keep engine.params (then the earlier candidate)."`
}

// DefaultSweep doubles from 25 users, bisects to max(5 users, 2 %), and
// estimates the capacity to ±10 % (95 %) with 6 to 30 fresh-seed runs.
func DefaultSweep() Sweep {
	return Sweep{
		Start:              25,
		Max:                4000,
		ResolutionUsers:    5,
		ResolutionFraction: 0.02,
		Repeats:            1,
		Seeds:              5,
		Precision:          0.10,
		MinRuns:            6,
		MaxRuns:            30,
		TopK:               3,
		Choose:             "highest-ceiling",
	}
}

func (s *Sweep) validate(p string, errs *Errors) {
	for i, u := range s.Users {
		if u < 1 {
			errs.Addf(fmt.Sprintf("%s.users[%d]", p, i), "must be at least 1, got %d", u)
		} else if i > 0 && u <= s.Users[i-1] {
			errs.Addf(fmt.Sprintf("%s.users[%d]", p, i), "user counts must increase, got %d after %d", u, s.Users[i-1])
		}
	}
	if s.Start < 1 {
		errs.Addf(p+".start", "must be at least 1, got %d", s.Start)
	}
	if s.Max < s.Start {
		errs.Addf(p+".max", "must be >= start (%d), got %d", s.Start, s.Max)
	}
	if s.ResolutionUsers < 1 {
		errs.Addf(p+".resolution_users", "must be at least 1, got %d", s.ResolutionUsers)
	}
	if s.ResolutionFraction < 0 || s.ResolutionFraction >= 1 {
		errs.Addf(p+".resolution_fraction", "must be in [0, 1), got %v", s.ResolutionFraction)
	}
	if s.Repeats < 1 {
		errs.Addf(p+".repeats", "must be at least 1, got %d", s.Repeats)
	}
	if s.Seeds < 1 {
		errs.Addf(p+".seeds", "must be at least 1, got %d", s.Seeds)
	}
	if s.Precision < 0 || s.Precision >= 1 {
		errs.Addf(p+".precision", "must be a share in [0, 1) (10%% or 0.10; 0 turns the estimate off), got %v", float64(s.Precision))
	}
	if s.MinRuns < 3 {
		errs.Addf(p+".min_runs", "must be at least 3 (the fit needs three runs), got %d", s.MinRuns)
	}
	if s.MaxRuns < s.MinRuns {
		errs.Addf(p+".max_runs", "must be >= min_runs (%d), got %d", s.MinRuns, s.MaxRuns)
	}
	if s.Duration < 0 || s.Warmup < 0 {
		errs.Addf(p+".duration", "durations must not be negative")
	}
	if s.TopK < 1 {
		errs.Addf(p+".top_k", "must be at least 1, got %d", s.TopK)
	}
	if s.Choose != "highest-ceiling" && s.Choose != "max-throughput" {
		errs.Addf(p+".choose", "unknown choice %q (one of \"highest-ceiling\", \"max-throughput\")", s.Choose)
	}
}
