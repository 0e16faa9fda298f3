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

// latencyClauseJSON is the wire form of a LatencyClause: summary.json files
// written before result owned the type spell Max as a Go duration string
// ("2s"), and `spoc report DIR` must keep reading them.
type latencyClauseJSON struct {
	Percentile float64 `json:"Percentile"`
	Max        string  `json:"Max"`
}

// MarshalJSON writes c as {"Percentile": 95, "Max": "2s"}.
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
// config decodes it from the sla section of a plan file. The JSON field names
// are those of summary.json files already written; keep them.
type SLA struct {
	TTFT LatencyClause `json:"TTFT"`
	ITL  LatencyClause `json:"ITL"`
	TPOT LatencyClause `json:"TPOT"`
	E2E  LatencyClause `json:"E2E"`
	// MaxErrorRate is the largest acceptable fraction of failed requests.
	MaxErrorRate float64 `json:"MaxErrorRate"`
	// Scope is SLAScopeOverall or SLAScopePerProfile; empty means overall.
	Scope string `json:"Scope"`
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
