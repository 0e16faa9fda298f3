package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/spoc-project/spoc/perfmodel"
)

// Correction is a per-deployment adjustment of the cost model, fitted to
// live measurements of one real deployment (spoc plan's multi fidelity,
// spoc sim calibrate --records). It has the three terms a step's cost is
// made of:
//
//   - Compute multiplies the time of compute-bound work: the achieved
//     FLOP/s of every kernel family is divided by it. A prefill chunk is
//     compute-bound, so this is the per-step prefill cost.
//   - Memory multiplies the time of memory-bound work: the achieved HBM
//     bandwidth is divided by it. A decode step reads the weights and the
//     KV cache, so this is the per-step decode cost.
//   - StepSeconds is added to every step (scheduler or launch overhead the
//     model does not know); it may be negative down to what the step costs.
//
// The multipliers act inside the roofline of each kernel (a kernel costs
// the longer of its compute and its memory time), not on the step's total:
// a step that mixes a prefill chunk with decodes costs what its kernels
// cost at the corrected rates, so a correction fitted at one flag setting
// (one mix of prefill and decode per step) carries to another. It sits
// outside the cost model's factors on purpose: whatever the factors are
// (built in, or from a calibration file), a correction says how far this
// deployment is from them, in three numbers a reader can judge.
//
// The zero Correction (and Compute = Memory = 1, StepSeconds = 0) changes
// nothing.
type Correction struct {
	// Compute multiplies the time of compute-bound kernel work.
	Compute float64 `json:"compute"`
	// Memory multiplies the time of memory-bound kernel work.
	Memory float64 `json:"memory"`
	// StepSeconds is added to every step.
	StepSeconds float64 `json:"step_seconds"`
}

// IsIdentity reports whether c changes nothing.
func (c Correction) IsIdentity() bool {
	return (c.Compute == 0 || c.Compute == 1) && (c.Memory == 0 || c.Memory == 1) && c.StepSeconds == 0
}

// Validate checks that the multipliers are positive and finite and the
// per-step term is within ±1 s.
func (c Correction) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"compute", c.Compute}, {"memory", c.Memory}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("correction %s must be a positive multiplier, got %g", f.name, f.v)
		}
	}
	if math.IsNaN(c.StepSeconds) || math.IsInf(c.StepSeconds, 0) || math.Abs(c.StepSeconds) > 1 {
		return fmt.Errorf("correction step_seconds must be within ±1 s, got %g", c.StepSeconds)
	}
	return nil
}

// Normal returns c with zero multipliers read as 1.
func (c Correction) Normal() Correction {
	if c.Compute == 0 {
		c.Compute = 1
	}
	if c.Memory == 0 {
		c.Memory = 1
	}
	return c
}

// corrected applies c to a cost model. A perfmodel.System is rebuilt on a
// GPU whose tensor-core peaks are divided by Compute and whose HBM
// bandwidth is divided by Memory (its memory capacity, hence the KV cache,
// is unchanged): each kernel's roofline is priced at the corrected rates.
// Any other model has no roofline to correct: its GPU terms are scaled by
// Compute in a step that computes a prompt chunk and by Memory in a step
// that only decodes. StepSeconds is added to the overhead term of every
// step. It returns base when c changes nothing.
func corrected(base CostModel, c Correction) (CostModel, error) {
	if c.IsIdentity() {
		return base, nil
	}
	c = c.Normal()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if sys, ok := base.(*perfmodel.System); ok {
		g := sys.GPU()
		g.BF16FLOPS /= c.Compute
		g.FP8FLOPS /= c.Compute
		g.FP4FLOPS /= c.Compute
		g.MemoryBandwidth /= c.Memory
		o := sys.Options()
		o.Factors = sys.Factors()
		s, err := perfmodel.NewSystem(sys.Model(), g, o)
		if err != nil {
			return nil, fmt.Errorf("correct the cost model: %w", err)
		}
		if c.StepSeconds == 0 {
			return s, nil
		}
		return correctedCost{base: s, c: Correction{Compute: 1, Memory: 1, StepSeconds: c.StepSeconds}}, nil
	}
	return correctedCost{base: base, c: c}, nil
}

// correctedCost adds the per-step term to a model (already corrected when
// it is a perfmodel.System, whose multipliers are then 1) and scales the
// GPU terms of any other model by step kind.
type correctedCost struct {
	base CostModel
	c    Correction
}

var _ CostModel = correctedCost{}

// Step prices batch with the base model, scales its GPU terms (Compute
// when a sequence computes more than one new token, Memory otherwise) and
// adds the per-step seconds to the overhead term. It does not allocate.
func (cc correctedCost) Step(batch []perfmodel.Seq) perfmodel.StepCost {
	c := cc.base.Step(batch)
	if c.Seconds == 0 {
		return c
	}
	k := cc.c.Memory
	for _, s := range batch {
		if s.NewTokens > 1 {
			k = cc.c.Compute
			break
		}
	}
	t := &c.Terms
	t.ScaleGPU(k)
	t.Overhead = max(t.Overhead+cc.c.StepSeconds, 0)
	c.Seconds = t.Sum()
	return c
}

// ReadCorrection reads a correction: a JSON object with a "correction"
// member (what spoc sim calibrate --records writes; other members are the
// fit's report and are not read) or a bare correction object. name is used
// in errors.
func ReadCorrection(r io.Reader, name string) (Correction, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCalibrationBytes+1))
	if err != nil {
		return Correction{}, fmt.Errorf("read correction %s: %w", name, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return Correction{}, fmt.Errorf("read correction %s: %w", name, err)
	}
	raw := data
	if c, ok := probe["correction"]; ok {
		raw = c
	}
	var old map[string]json.RawMessage
	if json.Unmarshal(raw, &old) == nil {
		if _, ok := old["prefill"]; ok {
			return Correction{}, fmt.Errorf("read correction %s: it has prefill and decode multipliers of the step's total, the first form of the correction, which did not carry across flag settings; fit it again with spoc sim calibrate --records (compute, memory and step_seconds)", name)
		}
	}
	var c Correction
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Correction{}, fmt.Errorf("read correction %s: %w", name, err)
	}
	if err := c.Validate(); err != nil {
		return Correction{}, fmt.Errorf("read correction %s: %w", name, err)
	}
	return c, nil
}

// LoadCorrection reads a correction file from disk.
func LoadCorrection(path string) (Correction, error) {
	f, err := os.Open(path)
	if err != nil {
		return Correction{}, fmt.Errorf("read correction: %w", err)
	}
	defer f.Close()
	return ReadCorrection(f, path)
}
