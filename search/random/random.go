// Package random is the random-search baseline: every parameter drawn
// independently and uniformly (in log space for log-scale parameters).
package random

import (
	"context"

	"github.com/spoc-project/spoc/search"
)

// Sampler draws every trial independently of the history.
type Sampler struct {
	rnd *search.TrialRand
}

var _ search.Sampler = (*Sampler)(nil)

// New returns a random sampler; equal seeds and histories give equal
// samples.
func New(seed uint64) *Sampler { return &Sampler{rnd: search.NewTrialRand(seed)} }

// Sample draws one parameter set uniformly from space.
func (s *Sampler) Sample(ctx context.Context, history []search.Trial, space search.Space) (search.Params, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.rnd.Next(len(history))
	p := make(search.Params, len(space.Params))
	for _, sp := range space.Params {
		p[sp.Name] = sp.Uniform(r)
	}
	return p, nil
}
