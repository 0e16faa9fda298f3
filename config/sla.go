package config

// SLA scopes.
const (
	SLAScopeOverall    = "overall"
	SLAScopePerProfile = "per-profile"
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

// DefaultSLA: TTFT p95 ≤ 2 s, ITL p95 ≤ 100 ms, errors ≤ 1 %, per profile.
func DefaultSLA() SLA {
	return SLA{
		TTFT:         LatencyClause{Percentile: 95, Max: Duration(2e9)},
		ITL:          LatencyClause{Percentile: 95, Max: Duration(100e6)},
		TPOT:         LatencyClause{Percentile: 95},
		E2E:          LatencyClause{Percentile: 95},
		MaxErrorRate: 0.01,
		Scope:        SLAScopePerProfile,
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
