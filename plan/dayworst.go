package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/sim"
)

// WorstMinutes is how many of a policy's minutes outside the SLA the day
// summary explains.
const WorstMinutes = 5

// Causes of a bad minute (WorstMinute.Causes).
const (
	// CauseColdStart: a replica that began serving in the minute or in
	// sim.ColdWindow before it serves, and the minute's prefix-cache hit
	// share is below 90 % of the day's.
	CauseColdStart = "cold start"
	// CauseScaleUpLag: a replica the policy started is not serving yet.
	CauseScaleUpLag = "scale-up lag"
	// CauseImbalance: one replica took at least 1.5× the mean of the
	// replicas that took requests.
	CauseImbalance = "imbalance"
	// CauseOverload: none of the above: the serving replicas are past
	// their ceiling.
	CauseOverload = "overload"
	// CauseErrors: the minute's latencies are within the limits and its
	// error rate is not (at the day's end: the requests cancelled when the
	// window closed).
	CauseErrors = "error rate"
)

// WorstMinute is one of a policy's worst minutes and what explains it.
type WorstMinute struct {
	// Start is the minute's start in seconds of the simulated day.
	Start    float64 `json:"start_s"`
	Requests int     `json:"requests"`
	// TTFT and ITL are the minute's values at the SLA's percentiles
	// (seconds); Severity the larger of their ratios to the limits.
	TTFT     float64 `json:"ttft_s"`
	ITL      float64 `json:"itl_s"`
	Severity float64 `json:"severity"`
	// Serving replicas at the minute's start, Starting ones at its end,
	// Cold ones (sim.ScaleMinute.Cold).
	Serving  int `json:"serving"`
	Starting int `json:"starting"`
	Cold     int `json:"cold_replicas"`
	// Imbalance is the most requests one replica took over the mean of
	// those that took any; HitShare the minute's prefix-cache hit share
	// (cached over prompt tokens) and DayHitShare the whole day's.
	Imbalance   float64  `json:"imbalance"`
	HitShare    float64  `json:"prefix_hit_share"`
	DayHitShare float64  `json:"day_prefix_hit_share"`
	Causes      []string `json:"causes"`
}

// worstMinutes ranks the minutes outside the SLA by how far past the
// limits they are and names their causes.
func worstMinutes(sla result.SLA, bins []result.AttainmentBin, st *sim.ScaleStats) []WorstMinute {
	if st == nil {
		return nil
	}
	var prompt, cached int64
	for _, m := range st.Minutes {
		prompt, cached = prompt+m.PromptTokens, cached+m.CachedTokens
	}
	day := share(cached, prompt)
	var out []WorstMinute
	for i, b := range bins {
		if b.Within || b.Requests == 0 {
			continue
		}
		w := WorstMinute{Start: b.Start, Requests: b.Requests, TTFT: b.TTFT, ITL: b.ITL, DayHitShare: day}
		if c := sla.TTFT; c.Max > 0 {
			w.Severity = max(w.Severity, b.TTFT/c.Max.Seconds())
		}
		if c := sla.ITL; c.Max > 0 {
			w.Severity = max(w.Severity, b.ITL/c.Max.Seconds())
		}
		for _, e := range st.Events {
			if e.At <= b.Start {
				w.Serving = e.Serving
			}
		}
		if i < len(st.Minutes) {
			m := st.Minutes[i]
			w.Starting, w.Cold = m.Starting, m.Cold
			w.HitShare = share(m.CachedTokens, m.PromptTokens)
			if m.Routed > 0 {
				w.Imbalance = float64(m.MaxRouted) * float64(m.Replicas) / float64(m.Routed)
			}
		}
		if w.Severity <= 1 {
			w.Causes = append(w.Causes, CauseErrors)
		}
		if w.Cold > 0 && w.HitShare < 0.9*day {
			w.Causes = append(w.Causes, CauseColdStart)
		}
		if w.Starting > 0 {
			w.Causes = append(w.Causes, CauseScaleUpLag)
		}
		if w.Imbalance >= 1.5 {
			w.Causes = append(w.Causes, CauseImbalance)
		}
		if len(w.Causes) == 0 {
			w.Causes = []string{CauseOverload}
		}
		out = append(out, w)
	}
	slices.SortStableFunc(out, func(a, b WorstMinute) int { return cmp.Compare(b.Severity, a.Severity) })
	return out[:min(len(out), WorstMinutes)]
}

func share(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// String is the minute as the headline prints it.
func (w WorstMinute) String() string {
	m := int(w.Start / 60)
	return fmt.Sprintf("%02d:%02d TTFT p95 %.2f s, ITL p95 %.0f ms (%s; %s, prefix hits %.0f %% vs %.0f %% over the day, imbalance %.2f)",
		m/60, m%60, w.TTFT, 1000*w.ITL, strings.Join(w.Causes, ", "), w.Fleet(), 100*w.HitShare, 100*w.DayHitShare, w.Imbalance)
}

// Fleet is the minute's replicas in words: those serving, how many of them
// are cold (a subset, not more replicas), and those still starting.
func (w WorstMinute) Fleet() string {
	s := fmt.Sprintf("%d serving", w.Serving)
	switch {
	case w.Cold == 0:
	case w.Cold == w.Serving && w.Cold == 2:
		s += " (both cold)"
	case w.Cold == w.Serving && w.Cold > 1:
		s += " (all cold)"
	default:
		s += fmt.Sprintf(" (%d of them cold)", w.Cold)
	}
	if w.Starting > 0 {
		s += fmt.Sprintf(", %d starting", w.Starting)
	}
	return s
}
