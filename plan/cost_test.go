package plan

import (
	"math"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/workload"
)

// referenceSummary holds the reference plan's numbers (gpt-oss-120b on
// 4× H100, compared with 2× H200 on the simulator), as report/testdata
// records them: only the fields the cost section reads.
func referenceSummary() *Summary {
	sim := Provenance{Source: "simulated", Engine: "sim"}
	return &Summary{
		Engine:   Engine{GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4},
		Capacity: Capacity{Users: 143, FirstFailingUsers: 146, ResolutionUsers: 5, Provenance: sim},
		Sweep: []SweepPoint{
			{Users: 137, Pass: true, OutputThroughput: 1850},
			{Users: 143, Pass: true, OutputThroughput: 1900},
			{Users: 146, Pass: false, OutputThroughput: 1910},
		},
		Compare: []CompareRow{
			{Name: "4x H100", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4, Users: 143, FirstFailingUsers: 146, ResolutionUsers: 5, OutputThroughput: 1900, Provenance: sim},
			{Name: "2x H200", GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2, Users: 34, FirstFailingUsers: 37, OutputThroughput: 600, Provenance: sim},
		},
	}
}

// The prices are made up for the test: $3.00 per H100-hour, $4.00 per
// H200-hour. 1000 users at peak, deployments run at 80 % of their ceiling.
func TestServingCostByHand(t *testing.T) {
	d := Demand{Users: 1000, Headroom: 0.8, PricePerGPUHour: map[string]float64{"H100-SXM": 3, "H200-SXM": 4}}
	// 4× H100: ceiling 143, first failing 146 (gap 3 < resolution 5), so
	// the interval is [140, 143].
	//   hi: 1000 / (143 × 0.8 = 114.4) = 8.74 → 9 deployments × 4 = 36 GPUs
	//   lo: 1000 / (140 × 0.8 = 112)   = 8.93 → 9 deployments × 4 = 36 GPUs
	//   36 × $3 = $108/h; × 730 / 1000 = $78.84 per user-month
	//   tokens per $: 1900 tok/s × 3600 / (4 × $3) = 570 000
	h100 := CostRow{GPU: "H100-SXM", GPUsPerDeployment: 4, TensorParallelSize: 4, CeilingUsers: 143, CeilingLoUsers: 140, CeilingHiUsers: 143, IntervalMethod: "sweep-step",
		Deployments: 9, DeploymentsMin: 9, DeploymentsMax: 9, GPUsMin: 36, GPUsMax: 36, Priced: true, PricePerGPUHour: 3,
		DollarsPerHourMin: 108, DollarsPerHourMax: 108, DollarsPerUserMonthMin: 78.84, DollarsPerUserMonthMax: 78.84,
		OutputTokensPerSecond: 1900, TokensPerDollar: 570000}
	// 2× H200: ceiling 34, no resolution recorded, first failing 37, so
	// the interval is [31, 34].
	//   hi: 1000 / (34 × 0.8 = 27.2) = 36.76 → 37 deployments × 2 = 74 GPUs
	//   lo: 1000 / (31 × 0.8 = 24.8) = 40.32 → 41 deployments × 2 = 82 GPUs
	//   74 × $4 = $296/h → $216.08 per user-month; 82 × $4 = $328/h → $239.44
	//   tokens per $: 600 × 3600 / (2 × $4) = 270 000
	h200 := CostRow{Option: "2x H200", GPU: "H200-SXM", GPUsPerDeployment: 2, TensorParallelSize: 2, CeilingUsers: 34, CeilingLoUsers: 31, CeilingHiUsers: 34, IntervalMethod: "sweep-step",
		Deployments: 37, DeploymentsMin: 37, DeploymentsMax: 41, GPUsMin: 74, GPUsMax: 82, Priced: true, PricePerGPUHour: 4,
		DollarsPerHourMin: 296, DollarsPerHourMax: 328, DollarsPerUserMonthMin: 216.08, DollarsPerUserMonthMax: 239.44,
		OutputTokensPerSecond: 600, TokensPerDollar: 270000}
	chosen, compared := h100, h100
	chosen.Option, compared.Option = "chosen: 4× H100-SXM", "4x H100"

	sum := referenceSummary()
	cost, note := ServingCost(sum, d)
	if note != "" || cost == nil {
		t.Fatalf("ServingCost = %v, %q; want a cost section", cost, note)
	}
	if cost.TargetUsers != 1000 || cost.Headroom != 0.8 || len(cost.Notes) != 0 {
		t.Errorf("cost header = %d users, headroom %g, notes %q", cost.TargetUsers, cost.Headroom, cost.Notes)
	}
	want := []CostRow{chosen, compared, h200}
	if len(cost.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(cost.Rows), len(want))
	}
	for i, w := range want {
		got := cost.Rows[i]
		w.Provenance = got.Provenance
		if got.Provenance.Source != "simulated" {
			t.Errorf("row %s: provenance %q, want simulated", w.Option, got.Provenance.Source)
		}
		if !sameRow(got, w) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
}

// With the sweep's interval over seeds, the deployments come from its ends,
// not from the ceiling less the step.
func TestServingCostUsesInterval(t *testing.T) {
	sum := referenceSummary()
	sum.Capacity.Users = 156
	sum.Capacity.CeilingInterval = &capacity.Interval{Lo: 132, Hi: 174, Method: capacity.IntervalMethod}
	sum.Compare = nil
	sum.Sweep = []SweepPoint{{Users: 156, Pass: true, OutputThroughput: 2200}}
	cost, _ := ServingCost(sum, Demand{Users: 1000, Headroom: 0.8, PricePerGPUHour: map[string]float64{"H100-SXM": 3}})
	// hi: 1000 / (174 × 0.8 = 139.2) = 7.18 → 8 deployments × 4 = 32 GPUs, $96/h, $70.08 per user-month
	// lo: 1000 / (132 × 0.8 = 105.6) = 9.47 → 10 deployments × 4 = 40 GPUs, $120/h, $87.60 per user-month
	want := CostRow{Option: "chosen: 4× H100-SXM", GPU: "H100-SXM", GPUsPerDeployment: 4, TensorParallelSize: 4,
		CeilingUsers: 156, CeilingLoUsers: 132, CeilingHiUsers: 174, IntervalMethod: capacity.IntervalMethod,
		Deployments: 9, DeploymentsMin: 8, DeploymentsMax: 10, GPUsMin: 32, GPUsMax: 40, Priced: true, PricePerGPUHour: 3,
		DollarsPerHourMin: 96, DollarsPerHourMax: 120, DollarsPerUserMonthMin: 70.08, DollarsPerUserMonthMax: 87.6,
		OutputTokensPerSecond: 2200, TokensPerDollar: 660000}
	got := cost.Rows[0]
	want.Provenance = got.Provenance
	if !sameRow(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

func sameRow(a, b CostRow) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-6*math.Max(1, math.Abs(y)) }
	fa := []float64{a.PricePerGPUHour, a.DollarsPerHourMin, a.DollarsPerHourMax, a.DollarsPerUserMonthMin, a.DollarsPerUserMonthMax, a.OutputTokensPerSecond, a.TokensPerDollar}
	fb := []float64{b.PricePerGPUHour, b.DollarsPerHourMin, b.DollarsPerHourMax, b.DollarsPerUserMonthMin, b.DollarsPerUserMonthMax, b.OutputTokensPerSecond, b.TokensPerDollar}
	for i := range fa {
		if !near(fa[i], fb[i]) {
			return false
		}
	}
	a.PricePerGPUHour, a.DollarsPerHourMin, a.DollarsPerHourMax, a.DollarsPerUserMonthMin, a.DollarsPerUserMonthMax, a.OutputTokensPerSecond, a.TokensPerDollar = 0, 0, 0, 0, 0, 0, 0
	b.PricePerGPUHour, b.DollarsPerHourMin, b.DollarsPerHourMax, b.DollarsPerUserMonthMin, b.DollarsPerUserMonthMax, b.OutputTokensPerSecond, b.TokensPerDollar = 0, 0, 0, 0, 0, 0, 0
	return a == b
}

func TestServingCostNotAskedOrUnpriced(t *testing.T) {
	tests := []struct {
		name      string
		d         Demand
		wantCost  bool
		wantNote  string // in the returned note or the section's notes
		unpriced  []string
		deployMin int // of the chosen row
	}{
		{name: "no target users", d: Demand{Headroom: 0.8, PricePerGPUHour: map[string]float64{"H100-SXM": 3}}, wantNote: "plan.target_users is 0"},
		{name: "no prices", d: Demand{Users: 1000, Headroom: 0.8}, wantCost: true, wantNote: "no price for H100-SXM, H200-SXM", unpriced: []string{"H100-SXM", "H200-SXM"}, deployMin: 9},
		{name: "one price missing", d: Demand{Users: 1000, Headroom: 0.8, PricePerGPUHour: map[string]float64{"H100-SXM": 3}}, wantCost: true, wantNote: "no price for H200-SXM", unpriced: []string{"H200-SXM"}, deployMin: 9},
		// at full headroom: 1000 / 143 = 6.99 → 7
		{name: "headroom 1", d: Demand{Users: 1000, Headroom: 1}, wantCost: true, wantNote: "no price", unpriced: []string{"H100-SXM", "H200-SXM"}, deployMin: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cost, note := ServingCost(referenceSummary(), tt.d)
			if (cost != nil) != tt.wantCost {
				t.Fatalf("cost = %v, want a section: %v", cost, tt.wantCost)
			}
			all := note
			if cost != nil {
				all += strings.Join(cost.Notes, "\n")
			}
			if !strings.Contains(all, tt.wantNote) {
				t.Errorf("notes %q lack %q", all, tt.wantNote)
			}
			if cost == nil {
				return
			}
			if got := cost.Rows[0].DeploymentsMin; got != tt.deployMin {
				t.Errorf("chosen deployments = %d, want %d", got, tt.deployMin)
			}
			for _, r := range cost.Rows {
				missing := false
				for _, g := range tt.unpriced {
					missing = missing || r.GPU == g
				}
				if r.Priced == missing || (missing && (r.DollarsPerHourMin != 0 || r.TokensPerDollar != 0)) {
					t.Errorf("row %s: priced %v with $%g/h, want priced %v", r.Option, r.Priced, r.DollarsPerHourMin, !missing)
				}
			}
		})
	}
}

// With a peak mix (plan.peak_shares) the cost section sizes from the
// ceilings measured at that mix, not from the workload mix's, and says so.
func TestServingCostAtThePeakMix(t *testing.T) {
	sum := referenceSummary()
	sim := Provenance{Source: "simulated", Engine: "sim"}
	shares := map[string]float64{"P0": 0.5, "P1": 0.3, "P2": 0.2}
	sum.Peak = &PeakMix{Shares: shares,
		Chosen: CompareRow{Name: "chosen", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4, Users: 100, FirstFailingUsers: 105, ResolutionUsers: 5, OutputThroughput: 1500, Provenance: sim},
		Compare: []CompareRow{
			{Name: "4x H100", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4, Users: 100, FirstFailingUsers: 105, ResolutionUsers: 5, OutputThroughput: 1500, Provenance: sim},
			{Name: "2x H200", GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2, Users: 25, FirstFailingUsers: 27, ResolutionUsers: 5, OutputThroughput: 500, Provenance: sim},
		}}
	cost, _ := ServingCost(sum, Demand{Users: 1000, Headroom: 0.8, PricePerGPUHour: map[string]float64{"H100-SXM": 3}})
	if cost == nil || len(cost.Rows) != 3 {
		t.Fatalf("cost %+v; want 3 rows", cost)
	}
	// chosen at the peak mix: [95, 100]
	//   hi: 1000 / (100 × 0.8 = 80) = 12.5 → 13 deployments × 4 = 52 GPUs
	//   lo: 1000 / (95 × 0.8 = 76)  = 13.2 → 14 deployments × 4 = 56 GPUs
	//   52 × $3 = $156/h, 56 × $3 = $168/h
	// 2× H200 at the peak mix: [25 − min(5, 2) = 23, 25]
	//   hi: 1000 / 20 = 50 → 50 deployments; lo: 1000 / 18.4 = 54.3 → 55
	c, h200 := cost.Rows[0], cost.Rows[2]
	if c.CeilingLoUsers != 95 || c.CeilingUsers != 100 || c.DeploymentsMin != 13 || c.DeploymentsMax != 14 ||
		c.GPUsMin != 52 || c.GPUsMax != 56 || c.DollarsPerHourMin != 156 || c.DollarsPerHourMax != 168 || c.OutputTokensPerSecond != 1500 {
		t.Errorf("chosen at the peak mix: %+v", c)
	}
	if h200.CeilingLoUsers != 23 || h200.CeilingUsers != 25 || h200.DeploymentsMin != 50 || h200.DeploymentsMax != 55 || h200.Priced {
		t.Errorf("2× H200 at the peak mix: %+v", h200)
	}
	if len(cost.PeakShares) != 3 || cost.PeakShares["P0"] != 0.5 {
		t.Errorf("cost does not say the ceilings are the peak mix's: %v", cost.PeakShares)
	}
}

func TestWithSharesReplacesWeights(t *testing.T) {
	spec := workload.Spec{Profiles: []workload.Profile{{Name: "P0", Weight: 0.7}, {Name: "P1", Weight: 0.2}, {Name: "P2", Weight: 0.1}}}
	got := withShares(spec, map[string]float64{"P0": 0.4, "P2": 0.6})
	if w := []float64{got.Profiles[0].Weight, got.Profiles[1].Weight, got.Profiles[2].Weight}; w[0] != 0.4 || w[1] != 0 || w[2] != 0.6 {
		t.Errorf("weights %v, want [0.4 0 0.6]", w)
	}
	if spec.Profiles[0].Weight != 0.7 {
		t.Error("withShares changed the plan's own workload")
	}
	if s := sharesText(map[string]float64{"P1": 0.3, "P0": 0.7}); s != "P0 70%, P1 30%" {
		t.Errorf("sharesText = %q", s)
	}
}
