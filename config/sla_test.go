package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
)

// The reference SLA has one source, result.DefaultSLA; the YAML default and
// its conversion back must agree with it.
func TestDefaultSLAIsResultDefault(t *testing.T) {
	if got, want := DefaultSLA().Result(), result.DefaultSLA(); got != want {
		t.Errorf("DefaultSLA().Result() = %+v, want %+v", got, want)
	}
}

func TestSLAResultCarriesEveryClause(t *testing.T) {
	cfg, err := Load(strings.NewReader("sla:\n  scope: overall\n  max_error_rate: 0.05\n  tpot:\n    percentile: 99\n    max: 40ms\n  e2e:\n    percentile: 50\n    max: 1m\n"), "sla.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.SLA.Result()
	want := result.SLA{
		TTFT:         result.LatencyClause{Percentile: 95, Max: 2 * time.Second},
		ITL:          result.LatencyClause{Percentile: 95, Max: 100 * time.Millisecond},
		TPOT:         result.LatencyClause{Percentile: 99, Max: 40 * time.Millisecond},
		E2E:          result.LatencyClause{Percentile: 50, Max: time.Minute},
		MaxErrorRate: 0.05,
		Scope:        result.SLAScopeOverall,
	}
	if got != want {
		t.Errorf("Result() = %+v\nwant %+v", got, want)
	}
}
