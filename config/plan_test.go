package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
)

// A plan section that sets only the user count keeps the default headroom,
// and prices resolve as given: no built-in price appears.
func TestPlanResolvesDemand(t *testing.T) {
	cfg, err := Load(strings.NewReader("plan:\n  target_users: 1000\n  gpu_price_per_hour: {H100-SXM: 2.5}\n"), "plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Demand{Users: 1000, Headroom: DefaultHeadroom, PricePerGPUHour: map[string]float64{"H100-SXM": 2.5}}
	if got := cfg.Plan.demand(); !reflect.DeepEqual(got, want) {
		t.Errorf("demand() = %+v, want %+v", got, want)
	}
	if got := Default().Plan.demand(); got.Users != 0 || got.PricePerGPUHour != nil {
		t.Errorf("default demand = %+v, want no users and no prices", got)
	}
}
