package search

import (
	"errors"
	"math/rand/v2"
	"sync"
)

// ErrExhausted is returned by a Sampler with nothing left to propose (a grid
// whose every point has been tried). Study loops stop on it without error.
var ErrExhausted = errors.New("search space exhausted")

// TrialRand hands out random generators that depend only on a seed, the
// length of the history a sample is drawn from and how many samples were
// already drawn for that length. Samplers use it so that a study stopped and
// resumed proposes the same parameters as an uninterrupted one, and so that
// resampling after a broken Rule yields a new candidate.
type TrialRand struct {
	seed uint64

	mu      sync.Mutex
	lastLen int
	attempt uint64
}

// NewTrialRand returns a TrialRand for seed.
func NewTrialRand(seed uint64) *TrialRand { return &TrialRand{seed: seed, lastLen: -1} }

// Next returns the generator for the next sample from a history of n trials.
func (t *TrialRand) Next(n int) *rand.Rand {
	t.mu.Lock()
	if n == t.lastLen {
		t.attempt++
	} else {
		t.lastLen, t.attempt = n, 0
	}
	a := t.attempt
	t.mu.Unlock()
	return rand.New(rand.NewPCG(t.seed, Mix64(uint64(n)<<20^a)))
}

// Mix64 is the SplitMix64 finaliser: a cheap, well-spread hash of x, used
// to derive independent streams and deterministic tie-breaks from a seed.
func Mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
