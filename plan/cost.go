package plan

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/spoc-project/spoc/capacity"
)

// HoursPerMonth is the month a $/user/month figure is priced over: 365 × 24
// / 12 hours, the convention of cloud price sheets.
const HoursPerMonth = 730

// Cost answers the buyer's question for each hardware option: how many
// deployments, GPUs and dollars serve TargetUsers at peak when every
// deployment runs at Headroom of its ceiling.
type Cost struct {
	TargetUsers int     `json:"target_users"`
	Headroom    float64 `json:"headroom"`
	// Rows are the chosen deployment first, then every compare row.
	Rows []CostRow `json:"rows"`
	// PeakShares is the peak's profile mix the ceilings were measured at
	// (Summary.Peak), when it differs from the workload's; empty: the
	// ceilings are the workload mix's.
	PeakShares map[string]float64 `json:"peak_shares,omitempty"`
	// Notes say what was not computed and why (a GPU without a price).
	Notes []string `json:"notes,omitempty"`
	// Fleet is the chosen deployment's fleet sized by simulating it under
	// the configured router (SizeFleet), beside the division of Rows[0].
	Fleet *FleetSize `json:"fleet,omitempty"`
}

// CostRow is one hardware option sized for the target. The capacity is
// carried as an interval [CeilingLoUsers, CeilingHiUsers]: the capacity
// estimate's confidence interval (IntervalMethod is the estimator's name;
// an unbounded upper end is the estimate), else the walk's 95 % interval
// over workload seeds, or, for a sweep that measured none, the ceiling
// less the sweep's step (its resolution, or the distance to the first
// failing count when smaller) up to the ceiling. DeploymentsMin comes from
// the high end, DeploymentsMax from the low one, Deployments from the
// estimate itself: DeploymentsMax − DeploymentsMin is what the
// measurement's uncertainty is worth. SpreadLoUsers is the low end of the
// spread of one run's verdict over workload seeds (0 without an
// estimate), and HeadroomCovers says whether plan.headroom × the capacity
// stays below it: a day whose users are as heavy as the spread's low end
// still meets the SLA.
type CostRow struct {
	Option string `json:"option"`
	// Extrapolates is where the option's simulated numbers leave the
	// calibration envelope (Envelope), in words; empty when inside or not
	// simulated.
	Extrapolates       string `json:"extrapolates,omitempty"`
	GPU                string `json:"gpu"`
	GPUsPerDeployment  int    `json:"gpus_per_deployment"`
	TensorParallelSize int    `json:"tensor_parallel_size"`
	CeilingUsers       int    `json:"ceiling_users"`
	CeilingLoUsers     int    `json:"ceiling_lo_users"`
	CeilingHiUsers     int    `json:"ceiling_hi_users"`
	// IntervalMethod is capacity.EstimatorMethod,
	// capacity.IntervalMethod, or "sweep-step".
	IntervalMethod string `json:"interval_method"`
	Deployments    int    `json:"deployments"`
	SpreadLoUsers  int    `json:"spread_lo_users,omitempty"`
	HeadroomCovers bool   `json:"headroom_covers_spread,omitempty"`
	// DeploymentsMin and DeploymentsMax are the deployments needed at the
	// high and the low end of the ceiling; 0 when that end is 0 users (no
	// number of deployments serves anyone).
	DeploymentsMin int `json:"deployments_min"`
	DeploymentsMax int `json:"deployments_max"`
	GPUsMin        int `json:"gpus_min"`
	GPUsMax        int `json:"gpus_max"`
	// Priced says whether plan.gpu_price_per_hour has this GPU; without it
	// every dollar figure below is absent, not zero.
	Priced                 bool    `json:"priced"`
	PricePerGPUHour        float64 `json:"price_per_gpu_hour,omitempty"`
	DollarsPerHourMin      float64 `json:"dollars_per_hour_min,omitempty"`
	DollarsPerHourMax      float64 `json:"dollars_per_hour_max,omitempty"`
	DollarsPerUserMonthMin float64 `json:"dollars_per_user_month_min,omitempty"`
	DollarsPerUserMonthMax float64 `json:"dollars_per_user_month_max,omitempty"`
	// OutputTokensPerSecond is one deployment's output throughput at its
	// ceiling; TokensPerDollar is that over one deployment's hourly price.
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`
	TokensPerDollar       float64 `json:"tokens_per_dollar,omitempty"`
	// Provenance is where the ceiling was found: live or simulated (compare
	// rows are always simulated).
	Provenance Provenance `json:"provenance"`
}

// option is one hardware option's ceiling, before sizing.
type option struct {
	name, gpu        string
	gpus, tp         int
	ceiling, lo, hi  int
	spreadLo         int
	method           string
	outputThroughput float64
	prov             Provenance
}

// ServingCost sizes every hardware option of sum for d: the chosen
// deployment (sum.Capacity) and each compare row. It returns nil and a note
// for the summary when d asks no user count. It reads only sum, so a
// summary.json written earlier can be priced again.
func ServingCost(sum *Summary, d Demand) (*Cost, string) {
	if d.Users <= 0 {
		return nil, "serving cost not computed: plan.target_users is 0 (set it to the peak user count to size deployments, GPUs and cost)"
	}
	c := sum.Capacity
	chosen := option{
		name: fmt.Sprintf("chosen: %d× %s", sum.Engine.GPUs, sum.Engine.GPU), gpu: sum.Engine.GPU,
		gpus: sum.Engine.GPUs, tp: sum.Engine.TensorParallelSize,
		outputThroughput: ceilingThroughput(sum.Sweep, c.Users), prov: c.Provenance,
	}
	opts := []option{chosen.withCeiling(c.Users, c.FirstFailingUsers, c.ResolutionUsers, c.CeilingInterval, c.Estimate)}
	compare := sum.Compare
	out := &Cost{TargetUsers: d.Users, Headroom: d.Headroom}
	if pk := sum.Peak; pk != nil {
		// the peak is what the deployments must serve: size from the
		// ceilings measured at its mix
		r := pk.Chosen
		opts[0] = opts[0].withCeiling(r.Users, r.FirstFailingUsers, r.ResolutionUsers, r.CeilingInterval, r.Estimate)
		opts[0].outputThroughput, opts[0].prov = r.OutputThroughput, r.Provenance
		compare, out.PeakShares = pk.Compare, pk.Shares
	}
	for _, r := range compare {
		o := option{name: r.Name, gpu: r.GPU, gpus: r.GPUs, tp: r.TensorParallelSize,
			outputThroughput: r.OutputThroughput, prov: r.Provenance}
		opts = append(opts, o.withCeiling(r.Users, r.FirstFailingUsers, r.ResolutionUsers, r.CeilingInterval, r.Estimate))
	}
	unpriced := map[string]bool{}
	for _, o := range opts {
		row := size(o, d)
		if !row.Priced {
			unpriced[o.gpu] = true
		}
		out.Rows = append(out.Rows, row)
	}
	if len(unpriced) > 0 {
		gpus := make([]string, 0, len(unpriced))
		for g := range unpriced {
			gpus = append(gpus, g)
		}
		sort.Strings(gpus)
		out.Notes = append(out.Notes, fmt.Sprintf("no price for %s in plan.gpu_price_per_hour: its cost is not computed (spoc has no built-in prices)", strings.Join(gpus, ", ")))
	}
	return out, ""
}

// withCeiling sets o's capacity and its interval: the estimate's
// confidence interval when there is one, else the sweep's interval over
// seeds when it has one, else [ceiling − step, ceiling].
func (o option) withCeiling(ceiling, firstFailing, resolution int, iv *capacity.Interval, est *capacity.CapacityEstimate) option {
	o.ceiling = ceiling
	if est != nil {
		o.ceiling = int(math.Floor(est.Users))
		o.lo, o.hi, o.method = int(math.Floor(est.Lo)), o.ceiling, est.Method
		if est.Bounded {
			o.hi = int(math.Floor(float64(est.Hi)))
		}
		if sp := est.SeedSpread; sp != nil {
			o.spreadLo = max(int(math.Floor(sp.Lo)), 0)
		}
		return o
	}
	if iv != nil {
		o.lo, o.hi, o.method = iv.Lo, iv.Hi, iv.Method
		return o
	}
	o.lo, o.hi, o.method = max(ceiling-step(ceiling, firstFailing, resolution), 0), ceiling, "sweep-step"
	return o
}

// step is the width of the ceiling's interval: the sweep's resolution, or
// the distance to the first failing count when that is smaller (the sweep
// stopped bisecting closer than its resolution) or no resolution was
// recorded.
func step(ceiling, firstFailing, resolution int) int {
	gap := 0
	if firstFailing > ceiling {
		gap = firstFailing - ceiling
	}
	switch {
	case resolution > 0 && gap > 0:
		return min(resolution, gap)
	case resolution > 0:
		return resolution
	}
	return gap
}

// ceilingThroughput is the output tokens/s of the sweep level at the
// ceiling (0 when the sweep did not record it).
func ceilingThroughput(sweep []SweepPoint, ceiling int) float64 {
	for _, p := range sweep {
		if p.Users == ceiling && p.Pass {
			return p.OutputThroughput
		}
	}
	return 0
}

// deployments is how many deployments of the given ceiling serve users at
// headroom: ceil(users / (ceiling × headroom)); 0 when the ceiling is 0.
func deployments(users, ceiling int, headroom float64) int {
	if ceiling <= 0 {
		return 0
	}
	// the tolerance keeps 1000/(250×0.8) at 5 where rounding makes it 5.000…1
	return int(math.Ceil(float64(users)/(float64(ceiling)*headroom) - 1e-9))
}

func size(o option, d Demand) CostRow {
	r := CostRow{Option: o.name, GPU: o.gpu, GPUsPerDeployment: o.gpus, TensorParallelSize: o.tp,
		CeilingUsers: o.ceiling, CeilingLoUsers: o.lo, CeilingHiUsers: o.hi, IntervalMethod: o.method,
		OutputTokensPerSecond: o.outputThroughput, Provenance: o.prov}
	r.Deployments = deployments(d.Users, r.CeilingUsers, d.Headroom)
	r.SpreadLoUsers = o.spreadLo
	r.HeadroomCovers = o.spreadLo > 0 && float64(o.ceiling)*d.Headroom <= float64(o.spreadLo)
	r.DeploymentsMin = deployments(d.Users, r.CeilingHiUsers, d.Headroom)
	r.DeploymentsMax = deployments(d.Users, r.CeilingLoUsers, d.Headroom)
	r.GPUsMin, r.GPUsMax = r.DeploymentsMin*o.gpus, r.DeploymentsMax*o.gpus
	price, ok := d.PricePerGPUHour[o.gpu]
	if !ok || price <= 0 {
		return r
	}
	r.Priced, r.PricePerGPUHour = true, price
	r.DollarsPerHourMin, r.DollarsPerHourMax = float64(r.GPUsMin)*price, float64(r.GPUsMax)*price
	r.DollarsPerUserMonthMin = r.DollarsPerHourMin * HoursPerMonth / float64(d.Users)
	r.DollarsPerUserMonthMax = r.DollarsPerHourMax * HoursPerMonth / float64(d.Users)
	if perDeployment := float64(o.gpus) * price; o.outputThroughput > 0 {
		r.TokensPerDollar = o.outputThroughput * 3600 / perDeployment
	}
	return r
}
