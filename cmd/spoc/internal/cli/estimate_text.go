package cli

import (
	"fmt"
	"io"
	"math"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/plan"
)

// capacityLines is what the capacity lines of spoc plan and spoc sweep
// print: the estimate and what it cost, or why there is none.
type capacityLines struct {
	est           *capacity.CapacityEstimate
	noEstimate    string
	refinement    *capacity.Refinement
	runs          int
	engineSeconds float64
	live          bool
}

// writeEstimate prints the capacity estimate with its confidence
// interval, the precision reached and its engine time, and the spread
// over workload seeds; false when there is no estimate to print.
func writeEstimate(w io.Writer, c capacityLines) bool {
	e := c.est
	if e == nil {
		if c.noEstimate != "" {
			fmt.Fprintf(w, "estimate: none (%s)\n", c.noEstimate)
		}
		return false
	}
	fmt.Fprintf(w, "capacity: %s, binding %s\n", plan.EstimateText(e), e.Binding)
	kind := "of engine time"
	if !c.live {
		kind = "of simulated engine time"
	}
	if r := c.refinement; r != nil {
		reached := "reached"
		if !r.Reached {
			reached = "not reached: " + r.Stopped
		}
		fresh := fmt.Sprintf("%d on fresh workload seeds", r.Runs)
		if r.NotCounted != "" {
			fresh += "; not counted: " + r.NotCounted
		}
		fmt.Fprintf(w, "precision: %s, target ±%.0f %% %s; %d runs (%s), %s %s\n",
			plan.PrecisionText(e), 100*r.Target, reached, c.runs, fresh, minutes(c.engineSeconds), kind)
	}
	if sp := e.SeedSpread; sp != nil {
		fmt.Fprintf(w, "spread over workload seeds: one run's verdict turns between %.0f and %.0f users (central %.0f %% of seeds): headroom must cover it\n",
			math.Floor(sp.Lo), math.Ceil(sp.Hi), 100*e.Confidence)
	}
	return true
}

// minutes prints seconds as "41 min" (or "50 s" below a minute).
func minutes(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.0f min", s/60)
}
