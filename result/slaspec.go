package result

import (
	"encoding/json"
	"fmt"
	"time"
)

// SLA scopes.
const (
	// SLAScopeOverall judges the mix of all profiles together.
	SLAScopeOverall = "overall"
	// SLAScopePerProfile judges every profile separately; the worst one
	// decides.
	SLAScopePerProfile = "per-profile"
)

// LatencyClause bounds one latency percentile; Max 0 disables the clause.
type LatencyClause struct {
	// Percentile is in (0, 100].
	Percentile float64
	// Max is the largest acceptable value at that percentile.
	Max time.Duration
}

// latencyClauseJSON is the wire form of a LatencyClause: Max is a Go
// duration string ("2s"). Older summary.json files spell the keys
// "Percentile" and "Max"; encoding/json matches keys case-insensitively, so
// they decode too.
type latencyClauseJSON struct {
	Percentile float64 `json:"percentile"`
	Max        string  `json:"max"`
}

// MarshalJSON writes c as {"percentile": 95, "max": "2s"}.
func (c LatencyClause) MarshalJSON() ([]byte, error) {
	return json.Marshal(latencyClauseJSON{Percentile: c.Percentile, Max: c.Max.String()})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (c *LatencyClause) UnmarshalJSON(b []byte) error {
	var w latencyClauseJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode SLA clause: %w", err)
	}
	c.Percentile, c.Max = w.Percentile, 0
	if w.Max != "" {
		d, err := time.ParseDuration(w.Max)
		if err != nil {
			return fmt.Errorf("decode SLA clause max: %w", err)
		}
		c.Max = d
	}
	return nil
}

// SLA is what a run must meet: latency percentiles, an error rate, and
// whether they are judged overall or for every profile separately. Package
// config decodes it from the sla section of a plan file. Its JSON names are
// snake_case like the rest of summary.json; UnmarshalJSON also reads the Go
// field names that summary.json files written before 2026-12 used.
type SLA struct {
	TTFT LatencyClause `json:"ttft"`
	ITL  LatencyClause `json:"itl"`
	TPOT LatencyClause `json:"tpot"`
	E2E  LatencyClause `json:"e2e"`
	// MaxErrorRate is the largest acceptable fraction of failed requests.
	MaxErrorRate float64 `json:"max_error_rate"`
	// Scope is SLAScopeOverall or SLAScopePerProfile; empty means overall.
	Scope string `json:"scope"`
}

// UnmarshalJSON reads the snake_case form and the older one whose keys are
// the Go field names ("TTFT", "MaxErrorRate", …), so `spoc report DIR`
// renders folders written by earlier versions.
func (s *SLA) UnmarshalJSON(b []byte) error {
	type plain SLA
	var w struct {
		plain
		// LegacyMaxErrorRate is the pre-snake_case key; the latency
		// clauses and Scope differ only in case and match anyway.
		LegacyMaxErrorRate *float64 `json:"MaxErrorRate"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode SLA: %w", err)
	}
	*s = SLA(w.plain)
	if w.LegacyMaxErrorRate != nil {
		s.MaxErrorRate = *w.LegacyMaxErrorRate
	}
	return nil
}

// DefaultSLA is the reference SLA: TTFT p95 ≤ 2 s, ITL p95 ≤ 100 ms, TPOT
// and E2E off (p95 when enabled), errors ≤ 1 %, judged per profile.
func DefaultSLA() SLA {
	return SLA{
		TTFT:         LatencyClause{Percentile: 95, Max: 2 * time.Second},
		ITL:          LatencyClause{Percentile: 95, Max: 100 * time.Millisecond},
		TPOT:         LatencyClause{Percentile: 95},
		E2E:          LatencyClause{Percentile: 95},
		MaxErrorRate: 0.01,
		Scope:        SLAScopePerProfile,
	}
}
