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
// spoc sim calibrate --records): the GPU time of a step is multiplied by
// Prefill for prompt tokens and Decode for generated tokens, and
// StepSeconds is added to every step. It sits outside the cost model's
// factors on purpose: whatever the factors are (built in, or from a
// calibration file), a correction says how far this deployment is from
// them, in three numbers a reader can judge.
//
// The zero Correction (and Prefill = Decode = 1, StepSeconds = 0) changes
// nothing.
type Correction struct {
	// Prefill multiplies the GPU time of prompt (prefill) tokens.
	Prefill float64 `json:"prefill"`
	// Decode multiplies the GPU time of generated (decode) tokens.
	Decode float64 `json:"decode"`
	// StepSeconds is added to every step (scheduler or launch overhead the
	// model does not know); it may be negative down to what the step costs.
	StepSeconds float64 `json:"step_seconds"`
}

// IsIdentity reports whether c changes nothing.
func (c Correction) IsIdentity() bool {
	return (c.Prefill == 0 || c.Prefill == 1) && (c.Decode == 0 || c.Decode == 1) && c.StepSeconds == 0
}

// Validate checks that the multipliers are positive and finite.
func (c Correction) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"prefill", c.Prefill}, {"decode", c.Decode}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("correction %s must be a positive multiplier, got %g", f.name, f.v)
		}
	}
	if math.IsNaN(c.StepSeconds) || math.IsInf(c.StepSeconds, 0) || math.Abs(c.StepSeconds) > 1 {
		return fmt.Errorf("correction step_seconds must be within ±1 s, got %g", c.StepSeconds)
	}
	return nil
}

// normal returns c with zero multipliers read as 1.
func (c Correction) normal() Correction {
	if c.Prefill == 0 {
		c.Prefill = 1
	}
	if c.Decode == 0 {
		c.Decode = 1
	}
	return c
}

// correctedCost applies a Correction to a cost model.
type correctedCost struct {
	base CostModel
	c    Correction
}

var _ CostModel = correctedCost{}

// Step prices batch with the base model, then scales its GPU terms by the
// token-weighted mean of the prefill and decode multipliers (a sequence
// with one new token is decoding, one with more is prefilling) and adds
// the per-step seconds to the overhead term. It does not allocate.
func (cc correctedCost) Step(batch []perfmodel.Seq) perfmodel.StepCost {
	c := cc.base.Step(batch)
	var prefill, decode float64
	for _, s := range batch {
		switch {
		case s.NewTokens == 1:
			decode++
		case s.NewTokens > 1:
			prefill += float64(s.NewTokens)
		}
	}
	if prefill+decode == 0 {
		return c
	}
	k := (cc.c.Prefill*prefill + cc.c.Decode*decode) / (prefill + decode)
	t := &c.Terms
	t.ScaleGPU(k)
	t.Overhead = max(t.Overhead+cc.c.StepSeconds, 0)
	c.Seconds = t.Sum()
	return c
}

// corrected wraps base with c, or returns base when c changes nothing.
func corrected(base CostModel, c Correction) CostModel {
	if c.IsIdentity() {
		return base
	}
	return correctedCost{base: base, c: c.normal()}
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
