package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
)

// searchSection turns a study result into the report's search section:
// every trial, the feasible front, hypervolume after each generation and the
// rank correlation of each numeric parameter with each objective.
func searchSection(spec tune.Spec, res *tune.Result) *Search {
	s := &Search{Study: res.Study, Sampler: res.Sampler, Users: spec.Users, Params: spec.Space}
	for _, o := range res.Objectives {
		s.Objectives = append(s.Objectives, Objective{Metric: o.Metric, Direction: o.Direction, Unit: tune.Unit(o.Metric)})
	}
	front := map[int]bool{}
	for _, t := range res.Front {
		front[t.Number] = true
	}
	for _, t := range res.Trials {
		m := Member{Number: t.Number, Generation: t.Generation, State: string(t.State), Params: t.Params,
			Values: t.Values, Constraints: t.Constraints, Feasible: t.State == search.StateComplete && t.Feasible(), OnFront: front[t.Number]}
		m.Provenance = trialProvenance(t)
		if r, ok := t.SystemAttrs["fail_reason"].(string); ok {
			m.Reason = r
		} else if r, ok := t.UserAttrs["error"].(string); ok {
			m.Reason = r
		}
		switch t.State {
		case search.StateComplete:
			s.Complete++
		case search.StateInfeasible:
			s.Infeasible++
		case search.StateFail:
			s.Failed++
		}
		s.Trials = append(s.Trials, m)
	}
	s.Hypervolume = hypervolumeByGeneration(res.Trials, res.Directions)
	s.Influence = influence(res.Trials, spec)
	return s
}

// hypervolumeByGeneration normalises every objective to [0, 1] over the
// complete feasible trials (oriented for minimisation) and measures the
// front of generations 0..g against the reference point 1.1 per objective.
func hypervolumeByGeneration(trials []search.Trial, dirs []search.Direction) []GenerationHV {
	var ok []search.Trial
	maxGen := 0
	for _, t := range trials {
		if t.State == search.StateComplete && t.Feasible() && len(t.Values) == len(dirs) {
			ok = append(ok, t)
			maxGen = max(maxGen, t.Generation)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	lo := make([]float64, len(dirs))
	hi := make([]float64, len(dirs))
	for i := range lo {
		lo[i], hi[i] = math.Inf(1), math.Inf(-1)
	}
	oriented := make([][]float64, len(ok))
	for j, t := range ok {
		oriented[j] = search.Oriented(t.Values, dirs)
		for i, v := range oriented[j] {
			lo[i], hi[i] = math.Min(lo[i], v), math.Max(hi[i], v)
		}
	}
	ref := make([]float64, len(dirs))
	for i := range ref {
		ref[i] = 1.1
	}
	var out []GenerationHV
	for g := 0; g <= maxGen; g++ {
		var pts [][]float64
		for j, t := range ok {
			if t.Generation > g {
				continue
			}
			n := make([]float64, len(dirs))
			for i, v := range oriented[j] {
				if hi[i] > lo[i] {
					n[i] = (v - lo[i]) / (hi[i] - lo[i])
				}
			}
			pts = append(pts, n)
		}
		hv, err := search.Hypervolume(pts, ref)
		if err != nil {
			continue
		}
		out = append(out, GenerationHV{Generation: g, Trials: len(pts), Hypervolume: hv})
	}
	return out
}

// influence is Spearman's rank correlation between each parameter (numbers;
// booleans as 0/1) and each objective over complete trials.
func influence(trials []search.Trial, spec tune.Spec) []Influence {
	var done []search.Trial
	for _, t := range trials {
		if t.State == search.StateComplete && len(t.Values) == len(spec.Objectives) {
			done = append(done, t)
		}
	}
	if len(done) < 4 {
		return nil
	}
	var out []Influence
	for _, p := range spec.Space {
		xs := make([]float64, 0, len(done))
		for _, t := range done {
			v, ok := numeric(t.Params[p.Name])
			if !ok {
				xs = nil
				break
			}
			xs = append(xs, v)
		}
		if xs == nil {
			continue
		}
		for i, o := range spec.Objectives {
			ys := make([]float64, len(done))
			for j, t := range done {
				ys[j] = t.Values[i]
			}
			if r, ok := spearman(xs, ys); ok {
				out = append(out, Influence{Param: p.Name, Objective: o.Metric, Correlation: r})
			}
		}
	}
	return out
}

func numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		var f float64
		if _, err := fmt.Sscan(x, &f); err == nil {
			return f, true
		}
	}
	return 0, false
}

// spearman is the Pearson correlation of average ranks; false when either
// variable is constant.
func spearman(xs, ys []float64) (float64, bool) {
	rx, ry := ranks(xs), ranks(ys)
	n := float64(len(xs))
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// trialProvenance reads the provenance a trial's evaluation recorded (a
// JSON object once stored); nil when the trial never ran.
func trialProvenance(t search.Trial) *Provenance {
	v, ok := t.UserAttrs[capacity.AttrProvenance]
	if !ok {
		return nil
	}
	var p Provenance
	switch x := v.(type) {
	case capacity.Provenance:
		p = x
	default:
		b, err := json.Marshal(x)
		if err != nil || json.Unmarshal(b, &p) != nil {
			return nil
		}
	}
	return &p
}
