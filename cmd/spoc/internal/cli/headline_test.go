package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/plan"
)

// TestPlanHeadlineStatesTheEstimate prints the headline of the default
// plan's summary (report/testdata/plan.json, written by a real plan) as
// spoc plan does: the estimate with its confidence interval and binding
// clause, the precision reached against its target with the runs and
// engine time it took, the spread over workload seeds, and the walk's
// ceiling beside them.
func TestPlanHeadlineStatesTheEstimate(t *testing.T) {
	d := fixtureSummary(t)
	e, r := d.Capacity.Estimate, d.Capacity.Refinement
	if e == nil || r == nil {
		t.Fatalf("the fixture has no estimate: %s", d.Capacity.NoEstimate)
	}
	var out bytes.Buffer
	writePlanResult(&out, d, "out")
	got := out.String()
	for _, want := range []string{
		"capacity: " + plan.EstimateText(e) + ", binding " + e.Binding + "\n",
		fmt.Sprintf("precision: ±%.1f %%, target ±10 %% reached; %d runs (%d on fresh workload seeds), ", 100*float64(e.Precision), d.Capacity.Runs, r.Runs),
		"of simulated engine time\n",
		"spread over workload seeds: one run's verdict turns between ",
		fmt.Sprintf("walk: ceiling %d users on workload.seed", d.Capacity.Ceiling),
		"tuned vs default: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the headline lacks %q:\n%s", want, got)
		}
	}
	if strings.HasPrefix(got, "capacity ceiling:") {
		t.Errorf("the headline leads with the walk's ceiling, not the estimate:\n%s", got)
	}
}

// fixtureSummary is the default plan's summary the report's fixture holds
// (report/testdata/plan.json, written by a real plan).
func fixtureSummary(t *testing.T) *plan.Summary {
	t.Helper()
	raw, err := os.ReadFile("../../../../report/testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var d plan.Summary
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}
