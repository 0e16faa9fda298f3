package config

import (
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/plan"
)

func TestPlanFidelityResolves(t *testing.T) {
	cfg, err := Load(strings.NewReader("plan:\n  fidelity: multi\n  budget: 2h\n  engine_startup: 90s\n  verify_top_k: 3\n"), "plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Fidelity{Mode: plan.FidelityMulti, Budget: 2 * time.Hour, Startup: 90 * time.Second, VerifyTopK: 3}
	if got := cfg.Plan.fidelity(); got != want {
		t.Errorf("fidelity() = %+v, want %+v", got, want)
	}
	if got := Default().Plan.fidelity(); got != (plan.Fidelity{}) {
		t.Errorf("default fidelity = %+v, want the engine's default (empty)", got)
	}
}

func TestPlanFidelityRejected(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"plan:\n  fidelity: exhaustive\n", `plan.fidelity: unknown fidelity "exhaustive"`},
		{"plan:\n  budget: -1h\n", "plan.budget: must not be negative"},
		{"plan:\n  engine_startup: -5s\n", "plan.engine_startup: must not be negative"},
		{"plan:\n  verify_top_k: -1\n", "plan.verify_top_k: must be in [0, 8]"},
		{"plan:\n  verify_top_k: 9\n", "plan.verify_top_k: must be in [0, 8]"},
		{"engine:\n  sim:\n    correction: /no/such/correction.json\n", "engine.sim.correction"},
	} {
		cfg, err := Load(strings.NewReader(tc.yaml), "plan.yaml")
		if err == nil {
			_, err = cfg.Setup(SetupOptions{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
