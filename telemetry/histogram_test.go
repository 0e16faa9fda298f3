package telemetry

import (
	"math"
	"testing"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	// 100 observations: 10 ≤ 0.1, 50 ≤ 0.2, 90 ≤ 0.5, all ≤ +Inf.
	b := []Bucket{{0.5, 90}, {0.1, 10}, {inf, 100}, {0.2, 50}}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []Bucket
		want    float64
	}{
		{"inside the lowest bucket interpolates from 0", 0.05, b, 0.05},
		{"bucket edge", 0.1, b, 0.1},
		{"median", 0.5, b, 0.2},
		{"interpolated", 0.7, b, 0.2 + 0.3*(20.0/40)},
		{"rank in +Inf bucket returns highest finite bound", 0.95, b, 0.5},
		{"q=0", 0, b, 0},
		{"q=1", 1, b, 0.5},
		{"q<0", -0.1, b, math.Inf(-1)},
		{"q>1", 1.1, b, inf},
		{"no +Inf bucket", 0.5, []Bucket{{0.1, 1}, {0.2, 2}}, math.NaN()},
		{"no observations", 0.5, []Bucket{{0.1, 0}, {inf, 0}}, math.NaN()},
		{"only +Inf", 0.5, []Bucket{{inf, 3}}, math.NaN()},
		{"non-monotonic counts are repaired", 0.5, []Bucket{{0.1, 6}, {0.2, 4}, {inf, 10}}, 0.1 * 5 / 6},
		{"negative lowest bound returns the bound", 0.1, []Bucket{{-1, 5}, {0, 8}, {inf, 10}}, -1},
		{"equal bounds written differently are merged", 0.5, []Bucket{{1, 2}, {1, 2}, {2, 8}, {inf, 8}}, 1},
	} {
		got := HistogramQuantile(tc.q, tc.buckets)
		if !(math.IsNaN(tc.want) && math.IsNaN(got)) && math.Abs(got-tc.want) > 1e-12 && got != tc.want {
			t.Errorf("%s: HistogramQuantile(%v) = %v, want %v", tc.name, tc.q, got, tc.want)
		}
	}
}

func TestReasonNames(t *testing.T) {
	got := ReasonNames(ReasonSWPowerCap | ReasonHWThermalSlowdown | 0x4000)
	want := []string{"sw_power_cap", "hw_thermal_slowdown", "0x4000"}
	if len(got) != len(want) {
		t.Fatalf("ReasonNames = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ReasonNames = %v, want %v", got, want)
		}
	}
	if ReasonNames(0) != nil {
		t.Error("no bits should give no names")
	}
}
