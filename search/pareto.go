package search

// Oriented returns values in the minimisation convention: maximised
// objectives are negated. It panics if the lengths differ, which is a
// programming error in the caller.
func Oriented(values []float64, dirs []Direction) []float64 {
	if len(values) != len(dirs) {
		panic("search.Oriented: values and directions differ in length")
	}
	out := make([]float64, len(values))
	for i, v := range values {
		if dirs[i] == Maximize {
			v = -v
		}
		out[i] = v
	}
	return out
}

// Dominates reports whether a Pareto-dominates b, both minimised: a is no
// worse in every objective and better in at least one.
func Dominates(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			better = true
		}
	}
	return better
}

// ConstrainedDominates implements Deb's constrained domination between two
// completed trials: a feasible trial dominates an infeasible one; two
// infeasible trials compare by total violation (smaller wins); two feasible
// trials compare by Pareto dominance of their oriented values.
func ConstrainedDominates(a, b *Trial, dirs []Direction) bool {
	va, vb := Violation(a.Constraints), Violation(b.Constraints)
	switch {
	case va == 0 && vb == 0:
		return Dominates(Oriented(a.Values, dirs), Oriented(b.Values, dirs))
	case va == 0:
		return true
	case vb == 0:
		return false
	}
	return va < vb
}

// NonDominatedSort splits items 0..n-1 into fronts by the dominance relation
// dom (fast non-dominated sort, Deb et al. 2002): front 0 holds the items
// nothing dominates, front 1 those dominated only by front 0, and so on.
// Within a front, items keep ascending index order.
func NonDominatedSort(n int, dom func(i, j int) bool) [][]int {
	dominatedBy := make([]int, n) // how many items dominate i
	dominates := make([][]int, n) // items i dominates
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case dom(i, j):
				dominates[i] = append(dominates[i], j)
				dominatedBy[j]++
			case dom(j, i):
				dominates[j] = append(dominates[j], i)
				dominatedBy[i]++
			}
		}
	}
	var fronts [][]int
	var cur []int
	for i := 0; i < n; i++ {
		if dominatedBy[i] == 0 {
			cur = append(cur, i)
		}
	}
	for len(cur) > 0 {
		fronts = append(fronts, cur)
		var next []int
		for _, i := range cur {
			for _, j := range dominates[i] {
				dominatedBy[j]--
				if dominatedBy[j] == 0 {
					next = append(next, j)
				}
			}
		}
		sortInts(next)
		cur = next
	}
	return fronts
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// SortTrials applies NonDominatedSort to trials under constrained domination;
// the fronts hold indexes into trials. Every trial must have len(dirs) values.
func SortTrials(trials []Trial, dirs []Direction) [][]int {
	oriented := make([][]float64, len(trials))
	viol := make([]float64, len(trials))
	for i := range trials {
		oriented[i] = Oriented(trials[i].Values, dirs)
		viol[i] = Violation(trials[i].Constraints)
	}
	return NonDominatedSort(len(trials), func(i, j int) bool {
		vi, vj := viol[i], viol[j]
		switch {
		case vi == 0 && vj == 0:
			return Dominates(oriented[i], oriented[j])
		case vi == 0:
			return true
		case vj == 0:
			return false
		}
		return vi < vj
	})
}

// ParetoFront returns the best trials of a study: the COMPLETE, feasible
// trials with a value per direction that no other such trial dominates, in
// trial order (Optuna's best_trials).
func ParetoFront(trials []Trial, dirs []Direction) []Trial {
	var cand []Trial
	for _, t := range trials {
		if t.State == StateComplete && len(t.Values) == len(dirs) && t.Feasible() {
			cand = append(cand, t)
		}
	}
	pts := make([][]float64, len(cand))
	for i := range cand {
		pts[i] = Oriented(cand[i].Values, dirs)
	}
	var front []Trial
	for i := range cand {
		dominated := false
		for j := range cand {
			if j != i && Dominates(pts[j], pts[i]) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, cand[i])
		}
	}
	return front
}
