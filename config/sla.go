package config

import "github.com/spoc-project/spoc/result"

// SLA scopes.
const (
	SLAScopeOverall    = result.SLAScopeOverall
	SLAScopePerProfile = result.SLAScopePerProfile
)

// LatencyClause bounds one latency percentile; Max 0 disables the clause.
type LatencyClause struct {
	Percentile float64  `yaml:"percentile" doc:"Percentile in (0, 100]."`
	Max        Duration `yaml:"max" doc:"Largest acceptable value at that percentile; 0 disables the clause."`
}

// SLA is what a run must meet. Clauses are checked overall or for every
// profile separately (per-profile: the ceiling is set by the worst profile).
type SLA struct {
	TTFT         LatencyClause `yaml:"ttft" doc:"Time to first token, from the scheduled send time." assumption:"SLA thresholds were not published"`
	ITL          LatencyClause `yaml:"itl" doc:"Inter-token latency (gap between streamed chunks)." assumption:"SLA thresholds were not published"`
	TPOT         LatencyClause `yaml:"tpot" doc:"Time per output token after the first; off by default."`
	E2E          LatencyClause `yaml:"e2e" doc:"End-to-end request latency; off by default."`
	MaxErrorRate float64       `yaml:"max_error_rate" doc:"Largest acceptable fraction of failed requests (HTTP errors, timeouts, broken streams)." assumption:"not published"`
	Scope        string        `yaml:"scope" doc:"overall, or per-profile (every profile must meet every clause)."`
}

// DefaultSLA is the reference SLA (result.DefaultSLA) in the YAML schema:
// TTFT p95 ≤ 2 s, ITL p95 ≤ 100 ms, errors ≤ 1 %, per profile.
func DefaultSLA() SLA {
	r := result.DefaultSLA()
	clause := func(c result.LatencyClause) LatencyClause {
		return LatencyClause{Percentile: c.Percentile, Max: Duration(c.Max)}
	}
	return SLA{
		TTFT:         clause(r.TTFT),
		ITL:          clause(r.ITL),
		TPOT:         clause(r.TPOT),
		E2E:          clause(r.E2E),
		MaxErrorRate: r.MaxErrorRate,
		Scope:        r.Scope,
	}
}

// Result is s as the SLA that result.Summary judges runs against.
func (s SLA) Result() result.SLA {
	clause := func(c LatencyClause) result.LatencyClause {
		return result.LatencyClause{Percentile: c.Percentile, Max: c.Max.D()}
	}
	return result.SLA{
		TTFT:         clause(s.TTFT),
		ITL:          clause(s.ITL),
		TPOT:         clause(s.TPOT),
		E2E:          clause(s.E2E),
		MaxErrorRate: s.MaxErrorRate,
		Scope:        s.Scope,
	}
}

func (s *SLA) validate(p string, errs *Errors) {
	for _, c := range []struct {
		name string
		c    LatencyClause
	}{{"ttft", s.TTFT}, {"itl", s.ITL}, {"tpot", s.TPOT}, {"e2e", s.E2E}} {
		if c.c.Max < 0 {
			errs.Addf(p+"."+c.name+".max", "must not be negative, got %s", c.c.Max)
		}
		if c.c.Max > 0 && !(c.c.Percentile > 0 && c.c.Percentile <= 100) {
			errs.Addf(p+"."+c.name+".percentile", "must be in (0, 100], got %v", c.c.Percentile)
		}
	}
	if s.MaxErrorRate < 0 || s.MaxErrorRate > 1 {
		errs.Addf(p+".max_error_rate", "must be in [0, 1], got %v", s.MaxErrorRate)
	}
	if !oneOf(s.Scope, []string{SLAScopeOverall, SLAScopePerProfile}) {
		errs.Addf(p+".scope", "unknown scope %q (one of \"overall\", \"per-profile\")", s.Scope)
	}
}
