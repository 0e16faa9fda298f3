package plan

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
)

// The worst minutes are the minutes outside the SLA furthest past the
// limits, each with the cause its fleet shows: a replica started and not
// yet serving, a cold replica with the prefix hits down, one replica
// taking far more than the others, or none of these.
func TestWorstMinutesNameTheirCauses(t *testing.T) {
	sla := result.SLA{TTFT: result.LatencyClause{Percentile: 95, Max: time.Second}, ITL: result.LatencyClause{Percentile: 95, Max: 50 * time.Millisecond}}
	bins := []result.AttainmentBin{
		{Start: 0, Requests: 10, TTFT: 0.3, ITL: 0.02, Within: true},
		{Start: 60, Requests: 10, TTFT: 3, ITL: 0.02},    // scale-up lag
		{Start: 120, Requests: 10, TTFT: 1.5, ITL: 0.02}, // cold start
		{Start: 180, Requests: 10, TTFT: 0.5, ITL: 0.1},  // imbalance, by ITL
		{Start: 240, Requests: 10, TTFT: 1.2, ITL: 0.02}, // overload
		{Start: 300, Requests: 0},
		{Start: 360, Requests: 10, TTFT: 0.2, ITL: 0.01}, // errors
	}
	st := &sim.ScaleStats{
		Events: []sim.ScaleEvent{{At: 0, Serving: 1}, {At: 30, Serving: 1, Starting: 1}, {At: 110, Serving: 2}},
		Minutes: []sim.ScaleMinute{
			{Start: 0, Routed: 10, MaxRouted: 10, Replicas: 1, PromptTokens: 1000, CachedTokens: 900},
			{Start: 60, Routed: 10, MaxRouted: 10, Replicas: 1, PromptTokens: 1000, CachedTokens: 900, Starting: 1},
			{Start: 120, Routed: 10, MaxRouted: 5, Replicas: 2, PromptTokens: 1000, CachedTokens: 300, Cold: 1},
			{Start: 180, Routed: 10, MaxRouted: 8, Replicas: 2, PromptTokens: 1000, CachedTokens: 900},
			{Start: 240, Routed: 10, MaxRouted: 5, Replicas: 2, PromptTokens: 1000, CachedTokens: 900, Cold: 1},
			{Start: 300},
			{Start: 360, Routed: 10, MaxRouted: 5, Replicas: 2, PromptTokens: 1000, CachedTokens: 900},
		},
	}
	w := worstMinutes(sla, bins, st)
	var at []float64
	for _, m := range w {
		at = append(at, m.Start)
	}
	want := [][]string{{CauseScaleUpLag}, {CauseColdStart}, {CauseImbalance}, {CauseOverload}, {CauseErrors}}
	if !slices.Equal(at, []float64{60, 180, 120, 240, 360}) {
		t.Fatalf("worst minutes at %v, want by severity 60 (3×), 180 (2×), 120 (1.5×), 240 (1.2×), 360 (0.2×: its errors)", at)
	}
	byStart := map[float64][]string{}
	for _, m := range w {
		byStart[m.Start] = m.Causes
	}
	for i, s := range []float64{60, 120, 180, 240, 360} {
		if !slices.Equal(byStart[s], want[i]) {
			t.Errorf("minute at %v s: causes %v, want %v", s, byStart[s], want[i])
		}
	}
	if w[0].Serving != 1 || w[0].Starting != 1 || w[1].Imbalance != 1.6 || math.Abs(w[0].DayHitShare-4800.0/6000) > 1e-12 {
		t.Errorf("worst minute %+v, second %+v", w[0], w[1])
	}
	if worstMinutes(sla, bins, nil) != nil {
		t.Error("a run without a scaler has worst minutes")
	}
}

// The cold replicas are some of those serving, not more of them.
func TestWorstMinuteFleetText(t *testing.T) {
	for _, tc := range []struct {
		w    WorstMinute
		want string
	}{
		{WorstMinute{Serving: 4, Cold: 1}, "4 serving (1 of them cold)"},
		{WorstMinute{Serving: 2, Cold: 2}, "2 serving (both cold)"},
		{WorstMinute{Serving: 3, Cold: 3, Starting: 1}, "3 serving (all cold), 1 starting"},
		{WorstMinute{Serving: 1, Starting: 2}, "1 serving, 2 starting"},
	} {
		if got := tc.w.Fleet(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.w, got, tc.want)
		}
	}
}
