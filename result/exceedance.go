package result

import "time"

// Exceedance is how many of one latency clause's samples in the measured
// window were over the clause's limit. A clause "p95 ≤ L" holds on a long
// window exactly when at most 5 % of its samples exceed L; the share over
// the limit of one run is an unbiased estimate of that share whatever the
// window's length, and the shares of several runs pool, so the capacity
// estimator reads these counts rather than the runs' percentiles
// (docs/capacity.md, "What the capacity is").
//
// Samples are those of the clause's metric (TTFT, TPOT and E2E per
// successful request, ITL per token), plus the requests cut off at the
// window's end that had already waited longer than the limit without a
// first token (TTFT, E2E): they are certainly over it, and leaving them out
// would flatter an overloaded window.
type Exceedance struct {
	// Clause is "ttft p95", "itl p95", …; Percentile and LimitSeconds its
	// terms.
	Clause       string  `json:"clause"`
	Percentile   float64 `json:"percentile"`
	LimitSeconds float64 `json:"limit_s"`
	Samples      int64   `json:"samples"`
	Over         int64   `json:"over"`
}

// Allowance is the share of samples the clause allows over its limit.
func (e Exceedance) Allowance() float64 { return 1 - e.Percentile/100 }

// exceedance counts one group's samples over each enabled latency clause.
type exceedance struct {
	samples, over [numMetrics]int64
}

// count adds r's samples of every enabled clause of sla.
func (x *exceedance) count(sla SLA, r *Record) {
	over := func(m Metric, c LatencyClause, d time.Duration, n int64) {
		x.samples[m] += n
		if d > c.Max {
			x.over[m] += n
		}
	}
	if r.Status != StatusOK {
		// a request cut off at the window's end without a first token,
		// after waiting longer than a clause's limit, is over it
		if waited, ok := r.CutOffWait(); ok {
			for _, c := range []struct {
				m Metric
				c LatencyClause
			}{{MetricTTFT, sla.TTFT}, {MetricE2E, sla.E2E}} {
				if c.c.Max > 0 && waited > c.c.Max {
					over(c.m, c.c, waited, 1)
				}
			}
		}
		return
	}
	if c := sla.TTFT; c.Max > 0 {
		if ttft, ok := r.TTFT(); ok {
			over(MetricTTFT, c, ttft, 1)
		}
	}
	if c := sla.TPOT; c.Max > 0 {
		if tpot, ok := r.TPOT(); ok {
			over(MetricTPOT, c, tpot, 1)
		}
	}
	if c := sla.E2E; c.Max > 0 {
		over(MetricE2E, c, r.E2E(), 1)
	}
	if c := sla.ITL; c.Max > 0 {
		for i, gap := range r.TokenGapsUS {
			n := r.ChunkTokens(i)
			over(MetricITL, c, time.Duration(gap/int64(n))*time.Microsecond, int64(n))
		}
	}
}

// list is the counts of sla's enabled clauses, in the verdict's order.
func (x *exceedance) list(sla SLA) []Exceedance {
	var out []Exceedance
	for _, c := range []struct {
		m Metric
		c LatencyClause
	}{{MetricTTFT, sla.TTFT}, {MetricITL, sla.ITL}, {MetricTPOT, sla.TPOT}, {MetricE2E, sla.E2E}} {
		if c.c.Max <= 0 {
			continue
		}
		out = append(out, Exceedance{Clause: c.m.String() + " p" + fmtFloat(c.c.Percentile), Percentile: c.c.Percentile,
			LimitSeconds: c.c.Max.Seconds(), Samples: x.samples[c.m], Over: x.over[c.m]})
	}
	return out
}
