// Package grid is the grid-search baseline: it walks the Cartesian product
// of every parameter's grid values (all choices of a categorical, every
// step of a stepped or small integer range, Points evenly spaced values —
// in log space for log parameters — otherwise) in a seeded shuffled order,
// skipping points already in the study, and reports search.ErrExhausted
// once every point has been proposed.
package grid

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/spoc-project/spoc/search"
)

// DefaultPoints is the number of values a continuous parameter gets.
const DefaultPoints = 5

// MaxGridSize bounds the Cartesian product the sampler will enumerate.
const MaxGridSize = 1 << 22

// Sampler proposes grid points; it is safe for concurrent use.
type Sampler struct {
	points int
	seed   uint64
}

var _ search.Sampler = (*Sampler)(nil)

// New returns a grid sampler giving continuous (and large integer) ranges
// points values each (DefaultPoints when ≤ 0), visiting the grid in an
// order shuffled by seed.
func New(points int, seed uint64) *Sampler {
	if points <= 0 {
		points = DefaultPoints
	}
	return &Sampler{points: points, seed: seed}
}

// Values returns the grid values of one parameter.
func (s *Sampler) Values(p search.Param) []any {
	if p.Kind == search.KindCategorical {
		return append([]any(nil), p.Choices...)
	}
	if p.Step > 0 && !p.Log {
		n := int(math.Floor((p.High-p.Low)/p.Step+1e-9)) + 1
		if n <= s.points || p.Kind == search.KindInt && n <= 2*s.points {
			out := make([]any, n)
			for i := range out {
				out[i] = p.FromInternal(p.ToInternal(p.Low + float64(i)*p.Step))
			}
			return out
		}
	}
	lo, hi := p.ToInternal(p.Low), p.ToInternal(p.High)
	out := make([]any, 0, s.points)
	seen := map[any]bool{}
	for i := 0; i < s.points; i++ {
		x := lo
		if s.points > 1 {
			x = lo + (hi-lo)*float64(i)/float64(s.points-1)
		}
		v := p.FromInternal(x)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Sample returns the first grid point, in shuffled order, that satisfies the
// space's rules and is not already a trial in history.
func (s *Sampler) Sample(ctx context.Context, history []search.Trial, space search.Space) (search.Params, error) {
	axes := make([][]any, len(space.Params))
	size := 1
	for i, p := range space.Params {
		axes[i] = s.Values(p)
		size *= len(axes[i])
		if size > MaxGridSize {
			return nil, fmt.Errorf("grid: more than %d points; use fewer points per parameter", MaxGridSize)
		}
	}
	tried := make(map[string]bool, len(history))
	for _, t := range history {
		if np, err := space.Normalize(t.Params); err == nil {
			tried[np.Key()] = true
		}
	}
	order := rand.New(rand.NewPCG(s.seed, 0x67726964)).Perm(size)
	for i, idx := range order {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		p := make(search.Params, len(axes))
		for k := len(axes) - 1; k >= 0; k-- {
			p[space.Params[k].Name] = axes[k][idx%len(axes[k])]
			idx /= len(axes[k])
		}
		if tried[p.Key()] {
			continue
		}
		if _, err := space.Check(p); err != nil {
			continue
		}
		return p, nil
	}
	return nil, search.ErrExhausted
}
