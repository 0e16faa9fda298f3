package nsga2

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/spoc-project/spoc/search"
)

// member is one parent: a trial number with its front rank and crowding
// distance, which the binary tournament compares.
type member struct {
	number int
	rank   int
	crowd  float64
}

// elite picks PopulationSize members from the candidate trial numbers:
// whole fronts in rank order, the last front cut by descending crowding
// distance (ties broken by a seeded hash of the trial number, so that the
// choice does not depend on which worker computes it).
func (s *Sampler) elite(cand []int, byNumber map[int]*search.Trial) ([]member, error) {
	dirs := s.opt.Directions
	trials := make([]search.Trial, 0, len(cand))
	for _, n := range cand {
		t, ok := byNumber[n]
		if !ok {
			return nil, fmt.Errorf("trial %d missing from history", n)
		}
		if len(t.Values) != len(dirs) {
			return nil, fmt.Errorf("trial %d has %d values, study has %d objectives", n, len(t.Values), len(dirs))
		}
		trials = append(trials, *t)
	}
	fronts := search.SortTrials(trials, dirs)
	out := make([]member, 0, s.opt.PopulationSize)
	for rank, front := range fronts {
		crowd := crowding(trials, front, dirs)
		ms := make([]member, len(front))
		for i, idx := range front {
			ms[i] = member{number: trials[idx].Number, rank: rank, crowd: crowd[i]}
		}
		if len(out)+len(ms) > s.opt.PopulationSize {
			sort.Slice(ms, func(i, j int) bool {
				if ms[i].crowd != ms[j].crowd {
					return ms[i].crowd > ms[j].crowd
				}
				return search.Mix64(s.opt.Seed^uint64(ms[i].number)) < search.Mix64(s.opt.Seed^uint64(ms[j].number))
			})
			ms = ms[:s.opt.PopulationSize-len(out)]
		}
		out = append(out, ms...)
		if len(out) == s.opt.PopulationSize {
			break
		}
	}
	return out, nil
}

// crowding returns the crowding distance of each member of front (indexes
// into trials): the sum over objectives of the normalised gap between its
// neighbours; boundary points get +Inf. Infeasible fronts are compared on
// their objective values the same way, which keeps them diverse.
func crowding(trials []search.Trial, front []int, dirs []search.Direction) []float64 {
	n := len(front)
	dist := make([]float64, n)
	if n <= 2 {
		for i := range dist {
			dist[i] = math.Inf(1)
		}
		return dist
	}
	order := make([]int, n)
	for m := range dirs {
		for i := range order {
			order[i] = i
		}
		val := func(i int) float64 { return trials[front[order[i]]].Values[m] }
		sort.SliceStable(order, func(i, j int) bool {
			return trials[front[order[i]]].Values[m] < trials[front[order[j]]].Values[m]
		})
		lo, hi := val(0), val(n-1)
		dist[order[0]] = math.Inf(1)
		dist[order[n-1]] = math.Inf(1)
		if hi == lo || math.IsInf(hi-lo, 0) || math.IsNaN(hi-lo) {
			continue
		}
		for i := 1; i < n-1; i++ {
			dist[order[i]] += (val(i+1) - val(i-1)) / (hi - lo)
		}
	}
	return dist
}

// tournament is binary tournament selection with the crowded comparison:
// lower rank wins, then larger crowding distance, then a coin flip.
func tournament(pop []member, r *rand.Rand) member {
	a, b := pop[r.IntN(len(pop))], pop[r.IntN(len(pop))]
	switch {
	case a.rank != b.rank:
		if a.rank < b.rank {
			return a
		}
		return b
	case a.crowd != b.crowd:
		if a.crowd > b.crowd {
			return a
		}
		return b
	case r.IntN(2) == 0:
		return a
	}
	return b
}
