package search

import (
	"fmt"
	"math"
	"sort"
)

// Hypervolume returns the volume of objective space dominated by points and
// bounded by the reference point ref, all minimised. Points that do not
// strictly dominate ref in every objective contribute nothing. Two
// objectives use an exact O(n log n) sweep; three or more use exact
// hypervolume by slicing objectives (HSO): the last objective is cut into
// slabs at each point's value and each slab's (d-1)-dimensional volume is
// computed recursively.
func Hypervolume(points [][]float64, ref []float64) (float64, error) {
	d := len(ref)
	if d == 0 {
		return 0, fmt.Errorf("hypervolume: empty reference point")
	}
	for _, r := range ref {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return 0, fmt.Errorf("hypervolume: reference point %v is not finite", ref)
		}
	}
	var pts [][]float64
	for i, p := range points {
		if len(p) != d {
			return 0, fmt.Errorf("hypervolume: point %d has %d objectives, reference point has %d", i, len(p), d)
		}
		inside := true
		for k, v := range p {
			if math.IsNaN(v) {
				return 0, fmt.Errorf("hypervolume: point %d has NaN in objective %d", i, k)
			}
			if !(v < ref[k]) {
				inside = false
				break
			}
		}
		if inside {
			pts = append(pts, p)
		}
	}
	if d == 2 {
		// The sweep skips dominated points itself; avoid the O(n²) filter.
		return hv2(pts, ref), nil
	}
	return hv(nonDominated(pts), ref), nil
}

// FrontHypervolume is Hypervolume over the Pareto front of trials (see
// ParetoFront) with ref given in the objectives' own directions.
func FrontHypervolume(trials []Trial, dirs []Direction, ref []float64) (float64, error) {
	if len(ref) != len(dirs) {
		return 0, fmt.Errorf("hypervolume: reference point has %d objectives, study has %d", len(ref), len(dirs))
	}
	front := ParetoFront(trials, dirs)
	pts := make([][]float64, len(front))
	for i := range front {
		pts[i] = Oriented(front[i].Values, dirs)
	}
	return Hypervolume(pts, Oriented(ref, dirs))
}

// nonDominated drops dominated points and exact duplicates.
func nonDominated(pts [][]float64) [][]float64 {
	out := make([][]float64, 0, len(pts))
	for i, p := range pts {
		keep := true
		for j, q := range pts {
			if i == j {
				continue
			}
			if Dominates(q, p) || (j < i && equal(p, q)) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}

func equal(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hv computes the hypervolume of mutually non-dominated points that all
// strictly dominate ref.
func hv(pts [][]float64, ref []float64) float64 {
	d := len(ref)
	switch {
	case len(pts) == 0:
		return 0
	case d == 1:
		m := ref[0]
		for _, p := range pts {
			m = math.Min(m, p[0])
		}
		return ref[0] - m
	case d == 2:
		return hv2(pts, ref)
	}
	// Slice along the last objective: between consecutive values z_i and
	// z_{i+1}, the dominated region's cross-section is the (d-1)-dimensional
	// hypervolume of the points with last objective ≤ z_i.
	sorted := append([][]float64(nil), pts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i][d-1] < sorted[j][d-1] })
	var vol float64
	proj := make([][]float64, 0, len(sorted))
	for i, p := range sorted {
		proj = append(proj, p[:d-1])
		next := ref[d-1]
		if i+1 < len(sorted) {
			next = sorted[i+1][d-1]
		}
		if depth := next - p[d-1]; depth > 0 {
			if d == 3 {
				// The 2-D sweep skips dominated points itself.
				vol += hv2(proj, ref[:2]) * depth
			} else {
				vol += hv(nonDominated(proj), ref[:d-1]) * depth
			}
		}
	}
	return vol
}

// hv2 is the exact 2-D sweep: sort by the first objective and add the
// horizontal strip each point adds below the running minimum of the second.
func hv2(pts [][]float64, ref []float64) float64 {
	sorted := append([][]float64(nil), pts...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i][0] != sorted[j][0] {
			return sorted[i][0] < sorted[j][0]
		}
		return sorted[i][1] < sorted[j][1]
	})
	var vol float64
	yMin := ref[1]
	for _, p := range sorted {
		if p[1] >= yMin {
			continue
		}
		// The strip between p's y and the lowest y so far is dominated
		// from p's x to the reference point.
		vol += (ref[0] - p[0]) * (yMin - p[1])
		yMin = p[1]
	}
	return vol
}
