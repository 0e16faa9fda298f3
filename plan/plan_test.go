package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
)

func TestChooseRules(t *testing.T) {
	base := Candidate{Trial: -1, Ceiling: 100}
	tuned := Candidate{Trial: 3, Ceiling: 100}
	if better("highest-ceiling", tuned, base, 2000, 1000) {
		t.Error("a tie on the ceiling must keep the baseline")
	}
	tuned.Ceiling = 110
	if !better("highest-ceiling", tuned, base, 900, 1000) {
		t.Error("a higher ceiling must win")
	}
	if better("max-throughput", tuned, base, 900, 1000) {
		t.Error("max-throughput must follow throughput at the ceiling")
	}
}

// A study that finds nothing feasible at a load the configured flags met in
// the baseline walk says why when its windows are shorter than the sweep's,
// and nothing when its windows are the sweep's or it found a front.
func TestNoFrontNote(t *testing.T) {
	st := &searchState{tuneUsers: 181, baseline: &capacity.SweepResult{Ceiling: 181}}
	tune := capacity.Load{Warmup: 90 * time.Second, Duration: 2 * time.Minute}
	sweep := capacity.Load{Warmup: 90 * time.Second, Duration: 3 * time.Minute}
	if n := noFrontNote(st, tune, sweep, 0); !strings.Contains(n, "at 181 users in its windows (1m30s warm-up, 2m0s measured)") || !strings.Contains(n, "search.duration") {
		t.Errorf("note %q", n)
	}
	if n := noFrontNote(st, sweep, sweep, 0); n != "" {
		t.Errorf("the sweep's windows: %q", n)
	}
	if n := noFrontNote(st, tune, sweep, 1); n != "" {
		t.Errorf("a front: %q", n)
	}
	st.baseline.Ceiling = 150
	if n := noFrontNote(st, tune, sweep, 0); n != "" {
		t.Errorf("the baseline failed at the study's load: %q", n)
	}
}
