package sim

import (
	"fmt"
	"math"

	"github.com/spoc-project/spoc/perfmodel"
)

// CostModel prices one engine step: how long the GPUs take to compute the
// batch's new tokens given what is already in the KV cache. perfmodel.System
// is the production implementation; Step must not allocate, it runs once per
// simulated step.
type CostModel interface {
	Step(batch []perfmodel.Seq) perfmodel.StepCost
}

var _ CostModel = (*perfmodel.System)(nil)

// LinearCost is an α/β step-time model: a fixed cost per step and per
// sequence, plus a cost per new token and per (new token × context token)
// pair. It is what BLIS-style simulators fit from a few measurements, and a
// transparent model for hand-computed tests.
type LinearCost struct {
	StepSeconds       float64 // α: per step, reported as Overhead
	SeqSeconds        float64 // per sequence in the batch, reported as Other
	TokenSeconds      float64 // β: per new token, reported as DenseGEMM
	ContextSeconds    float64 // per new token per 1000 context tokens, reported as Attention
	SMActiveWhileBusy float64 // SMActive reported for the non-overhead part
}

// Step implements CostModel.
func (c LinearCost) Step(batch []perfmodel.Seq) perfmodel.StepCost {
	var seqs, tokens, pairs float64
	for _, s := range batch {
		if s.NewTokens <= 0 {
			continue
		}
		seqs++
		tokens += float64(s.NewTokens)
		pairs += float64(s.NewTokens) * float64(s.ContextTokens+s.NewTokens) / 1000
	}
	if tokens == 0 {
		return perfmodel.StepCost{}
	}
	t := perfmodel.Terms{
		Overhead:  c.StepSeconds,
		Other:     c.SeqSeconds * seqs,
		DenseGEMM: c.TokenSeconds * tokens,
		Attention: c.ContextSeconds * pairs,
	}
	cost := perfmodel.StepCost{Seconds: t.Sum(), Terms: t}
	if cost.Seconds > 0 {
		busy := (cost.Seconds - t.Overhead) / cost.Seconds
		cost.KernelActive = 1 // α is GPU time (launches), not CPU
		cost.SMActive = c.SMActiveWhileBusy * busy
		cost.TensorActive = cost.SMActive / 2
		cost.DRAMActive = cost.SMActive / 2
	}
	return cost
}

// throttledCosts returns the cost model for a tensor-parallel group whose
// GPUs run at the given clock fractions. perfmodel.System re-derives its
// compute rates at the slowest clock; any other model has its whole GPU time
// stretched by the slowest clock, a conservative approximation.
func throttledCosts(base CostModel, clocks []float64) (CostModel, error) {
	slowest := 1.0
	for _, c := range clocks {
		if !(c > 0 && c <= 1) {
			return nil, fmt.Errorf("clock factor %g is not in (0, 1]", c)
		}
		slowest = math.Min(slowest, c)
	}
	if slowest == 1 {
		return base, nil
	}
	if cc, ok := base.(correctedCost); ok {
		// throttle the model under the correction, so a calibrated
		// deployment's throttled GPUs are priced like an uncorrected one's
		t, err := throttledCosts(cc.base, clocks)
		if err != nil {
			return nil, err
		}
		return correctedCost{base: t, c: cc.c}, nil
	}
	if sys, ok := base.(*perfmodel.System); ok {
		s, err := sys.WithClockFactors(clocks)
		if err != nil {
			return nil, fmt.Errorf("throttle GPUs: %w", err)
		}
		return s, nil
	}
	return stretchedCost{base: base, clock: slowest}, nil
}

// stretchedCost slows every GPU term of base by 1/clock.
type stretchedCost struct {
	base  CostModel
	clock float64
}

func (s stretchedCost) Step(batch []perfmodel.Seq) perfmodel.StepCost {
	c := s.base.Step(batch)
	c.Terms.ScaleGPU(1 / s.clock)
	c.Seconds = c.Terms.Sum()
	return c
}
