package tpe

import (
	"math"
	"sort"

	"github.com/spoc-project/spoc/search"
)

// observation is one trial as the model sees it: its parameters in
// internal coordinates and how good it was.
type observation struct {
	x []float64
	// values are the oriented (minimised) objective values of a COMPLETE
	// trial; nil otherwise.
	values    []float64
	violation float64
	// class orders trials that are not compared by values: 0 COMPLETE,
	// 1 INFEASIBLE (the server did not start), 2 still running.
	class int
}

type observations struct {
	all []observation
	// finished counts COMPLETE and INFEASIBLE trials.
	finished int
}

// observations collects the trials the model learns from. FAIL and PRUNED
// trials say nothing about the parameters and are left out, as are trials
// whose parameters do not fit the space (a study resumed with another one).
func (s *Sampler) observations(history []search.Trial, space search.Space) observations {
	var o observations
	for i := range history {
		t := &history[i]
		var ob observation
		switch t.State {
		case search.StateComplete:
			if len(t.Values) != len(s.opt.Directions) {
				continue
			}
			ob.values = search.Oriented(t.Values, s.opt.Directions)
			ob.violation = search.Violation(t.Constraints)
			o.finished++
		case search.StateInfeasible:
			ob.class = 1
			o.finished++
		case search.StateRunning, search.StateWaiting:
			ob.class = 2
		default:
			continue
		}
		p, err := space.Normalize(t.Params)
		if err != nil {
			continue
		}
		ob.x = make([]float64, len(space.Params))
		for j, sp := range space.Params {
			ob.x[j] = sp.ToInternal(p[sp.Name])
		}
		o.all = append(o.all, ob)
	}
	return o
}

// split ranks the observations and returns the good ones (the best
// Gamma·n COMPLETE trials) and the bad ones (every other observation).
func (s *Sampler) split(o observations) (good, bad [][]float64) {
	var feasible, violating []int
	for i, ob := range o.all {
		switch {
		case ob.class != 0:
			// INFEASIBLE and running trials are never good.
		case ob.violation == 0:
			feasible = append(feasible, i)
		default:
			violating = append(violating, i)
		}
	}
	complete := len(feasible) + len(violating)
	nGood := min(int(math.Ceil(s.opt.Gamma*float64(complete))), s.opt.MaxGood)
	nGood = max(1, min(nGood, complete))
	var order []int
	if len(feasible) > 0 {
		order = append(order, rankFeasible(o.all, feasible, min(nGood, len(feasible)))...)
	}
	sort.SliceStable(violating, func(a, b int) bool { return o.all[violating[a]].violation < o.all[violating[b]].violation })
	order = append(order, violating...)
	isGood := make(map[int]bool, nGood)
	for _, i := range order[:min(nGood, len(order))] {
		isGood[i] = true
	}
	for i, ob := range o.all {
		if isGood[i] {
			good = append(good, ob.x)
		} else {
			bad = append(bad, ob.x)
		}
	}
	return good, bad
}

// rankFeasible returns at least k of the feasible trials idx, best first:
// whole non-dominated fronts in order, and from the front that does not
// fit whole, the members picked greedily by hypervolume contribution.
func rankFeasible(all []observation, idx []int, k int) []int {
	fronts := search.NonDominatedSort(len(idx), func(a, b int) bool {
		return search.Dominates(all[idx[a]].values, all[idx[b]].values)
	})
	var out []int
	for _, f := range fronts {
		members := make([]int, len(f))
		for i, m := range f {
			members[i] = idx[m]
		}
		if len(out)+len(members) <= k {
			out = append(out, members...)
			continue
		}
		out = append(out, hssp(all, members, k-len(out))...)
		break
	}
	return out
}

// hssp picks k of the mutually non-dominated members by greedy
// hypervolume contribution in objective space normalised to the members'
// range, with the reference point just beyond their worst values.
func hssp(all []observation, members []int, k int) []int {
	if k <= 0 {
		return nil
	}
	d := len(all[members[0]].values)
	lo := make([]float64, d)
	hi := make([]float64, d)
	for j := range d {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
		for _, m := range members {
			lo[j] = min(lo[j], all[m].values[j])
			hi[j] = max(hi[j], all[m].values[j])
		}
	}
	pts := make([][]float64, len(members))
	for i, m := range members {
		pts[i] = make([]float64, d)
		for j := range d {
			span := hi[j] - lo[j]
			if span > 0 {
				pts[i][j] = (all[m].values[j] - lo[j]) / span
			}
		}
	}
	ref := make([]float64, d)
	for j := range ref {
		ref[j] = 1.1
	}
	chosen := make([]bool, len(members))
	var sel [][]float64
	var out []int
	for len(out) < k {
		best, bestHV := -1, -1.0
		for i := range members {
			if chosen[i] {
				continue
			}
			hv, err := search.Hypervolume(append(sel, pts[i]), ref)
			if err != nil {
				hv = 0
			}
			if hv > bestHV {
				best, bestHV = i, hv
			}
		}
		chosen[best] = true
		sel = append(sel, pts[best])
		out = append(out, members[best])
	}
	return out
}
