package plan

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/vllm"
)

// TunedVsDefault is the answer to "what did tuning gain?": the configured
// flags' ceiling and the chosen configuration's, each swept with the
// sweep's windows over the same workload seeds, the flags that differ, and
// whether the difference is larger than the seeds' noise.
type TunedVsDefault struct {
	// Default is engine.params; Tuned the chosen configuration or, when
	// the plan kept engine.params (KeptDefault), the study's candidate
	// with the highest ceiling. Same is set when no tuned configuration
	// could be compared (no study ran, or no candidate could), and then
	// Tuned repeats Default.
	Default     CeilingEstimate `json:"default"`
	Tuned       CeilingEstimate `json:"tuned"`
	KeptDefault bool            `json:"kept_default,omitempty"`
	Same        bool            `json:"same_config"`
	// TunedTrial is the study trial the tuned configuration came from (-1:
	// engine.params).
	TunedTrial int `json:"tuned_trial"`
	// Changed lists the flags whose value differs, by name.
	Changed []FlagChange `json:"changed_flags,omitempty"`
	// Difference is tuned − default over the common seeds (nil with one
	// seed: then DifferenceUsers and the sweep's resolution are all
	// there is).
	DifferenceUsers int                  `json:"difference_users"`
	Difference      *capacity.Difference `json:"difference,omitempty"`
	// NoDifference says why there is no Difference.
	NoDifference string `json:"no_difference,omitempty"`
	// WithinNoise: the difference's 95 % interval contains 0 or, without
	// seeds, the difference is no larger than the sweep's resolution.
	WithinNoise bool `json:"within_noise"`
	// Verdict says the above in one sentence.
	Verdict string `json:"verdict"`
}

// CeilingEstimate is one configuration's capacity: its estimate (with
// its confidence interval) when the sweep made one, and the walk's
// ceiling with its seed interval.
type CeilingEstimate struct {
	// Capacity is Estimate's users rounded down, else Users.
	Capacity   int                        `json:"capacity"`
	Estimate   *capacity.CapacityEstimate `json:"estimate,omitempty"`
	NoEstimate string                     `json:"no_estimate,omitempty"`
	Refinement *capacity.Refinement       `json:"refinement,omitempty"`
	// Users is the walk's ceiling on workload.seed.
	Users             int                `json:"ceiling"`
	FirstFailingUsers int                `json:"first_failing_users"`
	Interval          *capacity.Interval `json:"ceiling_interval,omitempty"`
	NoInterval        string             `json:"no_interval,omitempty"`
	ResolutionUsers   int                `json:"resolution_users"`
	Provenance        Provenance         `json:"provenance"`
}

// FlagChange is one engine flag the chosen configuration sets differently
// from engine.params. A side that leaves the flag unset runs with the
// engine's default: its value is vLLM's default (vllm.Defaults) and the
// matching ...IsEngineDefault field says so. A value is absent only when
// the flag is unset and spoc knows no default for it (and in summaries
// written before the effective value was recorded).
type FlagChange struct {
	Flag                   string `json:"flag"`
	Default                any    `json:"default,omitempty"`
	DefaultIsEngineDefault bool   `json:"default_is_engine_default,omitempty"`
	Tuned                  any    `json:"tuned"`
	TunedIsEngineDefault   bool   `json:"tuned_is_engine_default,omitempty"`
}

func estimate(r *capacity.SweepResult) CeilingEstimate {
	return CeilingEstimate{Capacity: capacityUsers(r), Estimate: r.Estimate, NoEstimate: r.NoEstimate, Refinement: r.Refinement,
		Users: r.Ceiling, FirstFailingUsers: r.FirstFailing, Interval: r.Interval, NoInterval: r.NoInterval,
		ResolutionUsers: r.Resolution, Provenance: r.Provenance()}
}

// capacityUsers is the capacity a sweep states: its estimate rounded
// down when it made one, else the walk's ceiling.
func capacityUsers(r *capacity.SweepResult) int {
	if e := r.Estimate; e != nil {
		return int(math.Floor(e.Users))
	}
	return r.Ceiling
}

// capacityText is a sweep's capacity in words: "168 users ± 5.8 % (95 %
// confidence 154–175)" for an estimate, else the walk's ceiling with its
// seed interval when it has one.
func capacityText(r *capacity.SweepResult) string {
	if e := r.Estimate; e != nil {
		return EstimateText(e)
	}
	return ceilingText(r.Ceiling, r.Interval)
}

// EstimateText is a capacity estimate in words: "168 users (95 %
// confidence 154–175)", or with an open upper end when the runs do not
// bound it.
func EstimateText(e *capacity.CapacityEstimate) string {
	return fmt.Sprintf("%d users %s", int(math.Floor(e.Users)), IntervalText(e))
}

// IntervalText is an estimate's interval in words: "(95 % confidence
// 154–175)". It gives the ends, not a "±": the interval is seldom
// centred on the estimate (its precision, half its width over the
// estimate, is PrecisionText's).
func IntervalText(e *capacity.CapacityEstimate) string {
	conf := 100 * e.Confidence
	if !e.Bounded {
		return fmt.Sprintf("(%.0f %% confidence: at least %d, no upper bound from these runs)", conf, int(math.Floor(e.Lo)))
	}
	return fmt.Sprintf("(%.0f %% confidence %d–%d)", conf, int(math.Floor(e.Lo)), int(math.Floor(float64(e.Hi))))
}

// PrecisionText is an estimate's precision in words — half its interval's
// width over the estimate, the quantity sweep.precision targets: "±5.8 %",
// or that it has none when the runs do not bound the interval above (its
// half-width is infinite).
func PrecisionText(e *capacity.CapacityEstimate) string {
	if !e.Bounded || math.IsInf(float64(e.Precision), 0) || math.IsNaN(float64(e.Precision)) {
		return "none (the interval is open above)"
	}
	return fmt.Sprintf("±%.1f %%", 100*float64(e.Precision))
}

// tunedCandidate is a study trial's candidate sweep.
type tunedCandidate struct {
	trial  int
	params map[string]any
	res    *capacity.SweepResult
}

// tunedVsDefault measures the configured flags' ceiling interval on the
// seeds the chosen configuration's was measured on — their grid walk is
// the baseline phase's, run with the same windows, repeats and resolution,
// so only the other seeds' walks run here — and compares the two. When the
// plan kept engine.params, the study's best candidate is compared with
// them instead, so the report still says what tuning would have changed.
func (p *planner) tunedVsDefault(ctx context.Context, ev *capacity.Evaluator, st *searchState) (string, error) {
	if p.final == nil {
		return "", fmt.Errorf("no sweep of the chosen configuration to compare")
	}
	opts := p.s.Sweep.SweepOptions
	opts.SeedProgress, opts.RunProgress = p.seedProgress, p.runProgress
	// interval walks the other seeds of a candidate sweep (a copy).
	interval := func(params map[string]any, r *capacity.SweepResult) (*capacity.SweepResult, error) {
		c := *r
		if err := capacity.IntervalConfig(ctx, ev, params, p.s.Windows.Sweep.At, opts, &c); err != nil {
			return nil, err
		}
		return &c, nil
	}
	tv := &TunedVsDefault{Tuned: estimate(p.final), TunedTrial: p.sum.Capacity.ChosenTrial}
	base := withBase(p.s.Deployment.Params, nil)
	defaults, _ := p.s.Search.EngineDefaults()
	switch {
	case p.sum.Capacity.ChosenTrial >= 0 && st.baseline != nil:
		def, err := interval(map[string]any{}, st.baseline)
		if err != nil {
			return "", fmt.Errorf("engine.params: %w", err)
		}
		tv.Default = estimate(def)
		tv.Changed = changedFlags(base, p.sum.Capacity.Config, defaults)
	case p.sum.Capacity.ChosenTrial < 0 && st.bestTuned != nil:
		// the plan keeps engine.params: its sweep is the final one
		tv.KeptDefault, tv.Default = true, tv.Tuned
		b := st.bestTuned
		tuned, err := interval(b.params, b.res)
		if err != nil {
			return "", fmt.Errorf("%s: %w", trialName(b.trial), err)
		}
		tv.Tuned, tv.TunedTrial = estimate(tuned), b.trial
		tv.Changed = changedFlags(base, withBase(p.s.Deployment.Params, b.params), defaults)
	default:
		tv.Same, tv.Default = true, tv.Tuned
	}
	tv.DifferenceUsers = tv.Tuned.Capacity - tv.Default.Capacity
	switch {
	case tv.Same:
	case tv.Default.Estimate != nil && tv.Tuned.Estimate != nil:
		if d, err := capacity.EstimateDifference(tv.Default.Estimate, tv.Tuned.Estimate); err == nil {
			tv.Difference = d
		} else {
			tv.NoDifference = "an estimate has no upper bound from its runs"
		}
	case tv.Default.Estimate != nil || tv.Tuned.Estimate != nil:
		tv.NoDifference = "one of the two has no estimate: " + firstNonEmpty(tv.Tuned.NoEstimate, tv.Default.NoEstimate)
	case tv.Default.Interval != nil && tv.Tuned.Interval != nil:
		d, err := capacity.PairedDifference(tv.Default.Interval, tv.Tuned.Interval)
		if err != nil {
			return "", err
		}
		tv.Difference = d
	}
	tv.WithinNoise, tv.Verdict = verdict(tv)
	p.sum.TunedVsDefault = tv
	return tv.Verdict, nil
}

// verdict says plainly whether tuning gained more than the noise.
func verdict(tv *TunedVsDefault) (bool, string) {
	def, tun := tv.Default, tv.Tuned
	switch {
	case tv.Same:
		return true, fmt.Sprintf("no tuned configuration to compare: the plan keeps engine.params (%s)", def.text())
	case tv.Difference != nil && tv.Difference.Method == capacity.EstimateDifferenceMethod:
		d := tv.Difference
		name := "tuned"
		if tv.KeptDefault {
			name = fmt.Sprintf("the plan keeps engine.params; the best tuned candidate (trial #%d)", tv.TunedTrial)
		}
		head := fmt.Sprintf("%s %s vs engine.params %s: %+.1f [%+.1f, %+.1f] users (%.0f %%, both estimated on fresh workload seeds)",
			name, tun.text(), def.text(), d.MeanUsers, d.Lo, d.Hi, 100*def.Estimate.Confidence)
		switch {
		case d.WithinNoise():
			return true, head + ": within noise — tuning did not measurably raise the capacity"
		case d.MeanUsers > 0 && tv.KeptDefault:
			return false, head + ": the candidate serves more users beyond noise, though the sweep that chose ranked it lower"
		case d.MeanUsers > 0:
			return false, head + ": tuning raised the capacity beyond noise"
		}
		return false, head + ": the tuned configuration serves fewer users beyond noise"
	case tv.Difference != nil:
		d := tv.Difference
		name := "tuned"
		if tv.KeptDefault {
			name = fmt.Sprintf("the plan keeps engine.params; the best tuned candidate (trial #%d)", tv.TunedTrial)
		}
		// two numbers: the difference on the seed that chose, and the paired
		// mean over every seed with its interval (which decides "noise")
		head := fmt.Sprintf("%s %s vs engine.params %s: %+d users on the configured seed, %+.1f [%+.1f, %+.1f] on average over %d paired seeds other than the one that chose (95 %%)",
			name, ceilingText(tun.Users, tun.Interval), ceilingText(def.Users, def.Interval), tv.DifferenceUsers, d.MeanUsers, d.Lo, d.Hi, d.Seeds)
		if d.WithinNoise() {
			return true, head + ": within noise — tuning did not measurably raise the ceiling"
		}
		if d.MeanUsers > 0 && tv.KeptDefault {
			return false, head + ": more users beyond noise on average over the seeds, though not on the configured seed that chose"
		}
		if d.MeanUsers > 0 {
			return false, head + ": tuning raised the ceiling beyond noise"
		}
		return false, head + ": the tuned configuration serves fewer users beyond noise"
	}
	step := max(tun.ResolutionUsers, def.ResolutionUsers)
	head := fmt.Sprintf("tuned %s vs engine.params %s: %+d users (no interval for the difference: %s)", tun.text(), def.text(), tv.DifferenceUsers, firstNonEmpty(tv.NoDifference, tun.NoInterval, def.NoInterval))
	if abs(tv.DifferenceUsers) <= step {
		return true, head + fmt.Sprintf("; within the sweep's step of %d users", step)
	}
	return false, head + fmt.Sprintf("; more than the sweep's step of %d users, but one seed cannot tell it from noise", step)
}

// text is the configuration's capacity in words.
func (c CeilingEstimate) text() string {
	if c.Estimate != nil {
		return EstimateText(c.Estimate)
	}
	return ceilingText(c.Users, c.Interval)
}

// ceilingText is "N [lo, hi] users", or "N users" without an interval.
func ceilingText(users int, iv *capacity.Interval) string {
	if iv == nil {
		return fmt.Sprintf("%d users", users)
	}
	return fmt.Sprintf("%d [%d, %d] users", users, iv.Lo, iv.Hi)
}

// changedFlags lists the flags whose values differ between a and b.
// changedFlags compares the flags two configurations run with: a flag one
// of them leaves unset runs at the engine's default, so that is the value
// compared (and shown); a flag set to the engine's default on one side and
// unset on the other is no change.
// defaults are the engine flavor's (tune.Spec.EngineDefaults).
func changedFlags(a, b, defaults map[string]any) []FlagChange {
	effective := func(m map[string]any, k string) (v any, engineDefault bool) {
		if v, ok := m[k]; ok {
			return v, false
		}
		for dk, v := range defaults {
			if vllm.FlagName(dk) == vllm.FlagName(k) {
				return v, true
			}
		}
		return nil, false
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	// equivalent settings (a long-prefill threshold at or above the batch
	// budget is off, like 0) are no change; the table shows what was set
	ca, cb := vllm.Canonical(a, nil), vllm.Canonical(b, nil)
	var out []FlagChange
	for k := range keys {
		d, dEngine := effective(a, k)
		t, tEngine := effective(b, k)
		cd, _ := effective(ca, k)
		ct, _ := effective(cb, k)
		if cd != nil && ct != nil && fmt.Sprint(cd) == fmt.Sprint(ct) {
			continue
		}
		out = append(out, FlagChange{Flag: k, Default: d, DefaultIsEngineDefault: dEngine, Tuned: t, TunedIsEngineDefault: tEngine})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Flag < out[j].Flag })
	return out
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func abs(x int) int { return max(x, -x) }
