package report

import (
	"testing"

	"github.com/spoc-project/spoc/plan"
)

// TestProvenanceTextNamesAnExternalServerOnce: an external server's launch
// is its address, which summary.md printed twice ("external engine
// (http://h:8000) at http://h:8000").
func TestProvenanceTextNamesAnExternalServerOnce(t *testing.T) {
	for _, c := range []struct {
		p    plan.Provenance
		want string
	}{
		{plan.Provenance{Source: "live", Engine: "external", Launch: "http://127.0.0.1:8000", Endpoint: "http://127.0.0.1:8000", Version: "0.11.2"},
			"live: external engine at http://127.0.0.1:8000, server version 0.11.2"},
		{plan.Provenance{Source: "live", Engine: "process", Launch: "vllm serve m --port {{.Port}}", Endpoint: "http://127.0.0.1:41000"},
			"live: process engine (vllm serve m --port {{.Port}}) at http://127.0.0.1:41000"},
	} {
		if got := provenanceText(c.p); got != c.want {
			t.Errorf("provenanceText(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
