package plan

import (
	"fmt"
	"math"
	"strings"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/sim"
)

// Envelope says whether the plan's simulated operating points lie inside
// what the simulator's calibration measured. A simulated number outside it
// extrapolates fitted kernel efficiencies to conditions nobody measured.
type Envelope struct {
	// Calibration names the calibration checked against ("built-in
	// gpt-oss calibration (vLLM 0.11.2, 0.13.0; h100, b200)").
	Calibration string `json:"calibration"`
	// Fitted is the calibration's envelope.
	Fitted perfmodel.Envelope `json:"fitted"`
	// OutOfSample is the calibration's leave-one-GPU-out error: per GPU
	// predicted without being fitted, per metric, MAPE and mean signed error.
	OutOfSample []perfmodel.HeldOutError `json:"out_of_sample,omitempty"`
	// Outside lists the dimensions in which the plan's operating points
	// leave the envelope, each at its farthest point.
	Outside []perfmodel.Excursion `json:"outside,omitempty"`
	// Points are the sweep levels, each with its own excursions.
	Points []EnvelopePoint `json:"points,omitempty"`
	// Compare are the hardware targets of spoc plan --compare, each
	// checked at its ceiling: every target is simulated, so every one of
	// its numbers rests on the calibration.
	Compare []TargetEnvelope `json:"compare,omitempty"`
}

// TargetEnvelope is one compare target checked against the envelope.
type TargetEnvelope struct {
	Name               string                `json:"name"`
	GPU                string                `json:"gpu"`
	GPUs               int                   `json:"gpus"`
	TensorParallelSize int                   `json:"tensor_parallel_size"`
	Concurrency        int                   `json:"concurrency"`
	Outside            []perfmodel.Excursion `json:"outside,omitempty"`
}

// Excursions is the target's excursions in words ("" inside).
func (t TargetEnvelope) Excursions() string {
	parts := make([]string, len(t.Outside))
	for i, x := range t.Outside {
		parts[i] = x.String()
	}
	return strings.Join(parts, "; ")
}

// Target returns the check of the compare target name; false when there
// is none.
func (e *Envelope) Target(name string) (TargetEnvelope, bool) {
	if e == nil {
		return TargetEnvelope{}, false
	}
	for _, t := range e.Compare {
		if t.Name == name {
			return t, true
		}
	}
	return TargetEnvelope{}, false
}

// EnvelopePoint is one sweep level checked against the envelope.
type EnvelopePoint struct {
	Users int `json:"users"`
	// Concurrency is the most requests one replica may hold in flight: the
	// level's users over the replicas, capped by the chosen configuration's
	// max-num-seqs (think time keeps the real number lower).
	Concurrency int                   `json:"concurrency"`
	Outside     []perfmodel.Excursion `json:"outside,omitempty"`
}

// checkEnvelope compares the plan's simulated operating points with the
// built-in calibration of the simulated model. It returns nil and a note
// when there is nothing to compare with.
func checkEnvelope(s Setup, sum *Summary) (*Envelope, string) {
	if err := s.Deployment.SimErr; err != nil {
		return nil, "calibration envelope not checked: " + err.Error()
	}
	dep := s.Deployment.Sim
	var env *Envelope
	var c perfmodel.Calibration
	if s.CalibrationFile != "" {
		fitted, err := sim.LoadCalibrationEnvelope(s.CalibrationFile)
		if err != nil {
			return nil, "calibration envelope not checked: " + err.Error()
		}
		if fitted == nil {
			return nil, "the calibration file " + s.CalibrationFile + " states no measured envelope: whether this plan's operating points lie inside what it was fitted on is not checked"
		}
		c.Envelope = *fitted
		env = &Envelope{Calibration: fmt.Sprintf("calibration file %s (%s on %s)", s.CalibrationFile,
			strings.Join(fitted.Engines, ", "), strings.Join(fitted.GPUs, ", ")), Fitted: *fitted}
	} else {
		var ok bool
		if c, ok = perfmodel.CalibrationFor(dep.Model); !ok {
			return nil, "no calibration for " + dep.Model.Name + ": every simulated number rests on first-principles factors"
		}
		env = &Envelope{Calibration: fmt.Sprintf("built-in %s calibration (%s on %s)", c.Family,
			strings.Join(c.Envelope.Engines, ", "), strings.Join(c.Envelope.GPUs, ", ")),
			Fitted: c.Envelope, OutOfSample: c.OutOfSample}
	}
	tp := max(dep.TensorParallelSize, 1)
	replicas := max(1, max(dep.GPUs, tp)/tp)
	// The chosen configuration's flags over the configured ones: they cap
	// the requests in flight and say whether prefix caching is on.
	params := dep.Params
	if len(sum.Capacity.Config) > 0 {
		merged := map[string]any{}
		for k, v := range s.Deployment.Params {
			merged[k] = v
		}
		for k, v := range sum.Capacity.Config {
			merged[k] = v
		}
		if p, err := sim.ParamsFromMap(merged); err == nil {
			params = p
		}
	}
	op := perfmodel.OperatingPoint{Model: dep.Model.Name, GPU: dep.GPU.Name, TensorParallel: tp, PrefixCaching: params.EnablePrefixCaching}
	if w := sum.Workload; w != nil {
		lo, hi := math.MaxInt, 0
		olo, ohi := math.MaxInt, 0
		for _, p := range w.Profiles {
			lo, hi = min(lo, p.ContextStartP50), max(hi, p.ContextMax)
			olo, ohi = min(olo, p.OutputBudgetP50), max(ohi, p.OutputBudgetP50)
			op.MultiTurn = op.MultiTurn || p.TurnsP50 > 1
		}
		if hi > 0 {
			op.PromptTokens = perfmodel.IntRange{Min: lo, Max: hi}
		}
		if ohi > 0 {
			op.OutputTokens = perfmodel.IntRange{Min: olo, Max: ohi}
		}
	}
	worst := map[string]int{}
	add := func(xs []perfmodel.Excursion) {
		for _, x := range xs {
			i, seen := worst[x.Dimension]
			if !seen {
				worst[x.Dimension] = len(env.Outside)
				env.Outside = append(env.Outside, x)
			} else if x.Factor > env.Outside[i].Factor {
				env.Outside[i] = x
			}
		}
	}
	add(c.Envelope.Check(op))
	for _, sp := range sum.Sweep {
		q := op
		q.Concurrency = (sp.Users + replicas - 1) / replicas
		if params.MaxNumSeqs > 0 {
			q.Concurrency = min(q.Concurrency, params.MaxNumSeqs)
		}
		xs := c.Envelope.Check(q)
		env.Points = append(env.Points, EnvelopePoint{Users: sp.Users, Concurrency: q.Concurrency, Outside: xs})
		add(xs)
	}
	for _, r := range sum.Compare {
		q := op
		q.GPU, q.TensorParallel = r.GPU, max(r.TensorParallelSize, 1)
		reps := max(1, r.GPUs/q.TensorParallel)
		q.Concurrency = (r.Users + reps - 1) / reps
		if params.MaxNumSeqs > 0 {
			q.Concurrency = min(q.Concurrency, params.MaxNumSeqs)
		}
		env.Compare = append(env.Compare, TargetEnvelope{Name: r.Name, GPU: r.GPU, GPUs: r.GPUs, TensorParallelSize: r.TensorParallelSize,
			Concurrency: q.Concurrency, Outside: c.Envelope.Check(q)})
	}
	return env, ""
}

// EnvelopeWarning is the one-line warning a plan outside its calibration
// envelope prints: "simulated numbers extrapolate the calibration: prompt
// length up to 131072 tokens outside ... (16×); prefix caching on ...".
func (e *Envelope) EnvelopeWarning() string {
	if e == nil {
		return ""
	}
	var parts []string
	said := map[string]bool{}
	for _, x := range e.Outside {
		parts = append(parts, x.String())
		said[x.String()] = true
	}
	for _, t := range e.Compare {
		var own []string // what the plan's own deployment did not already say
		for _, x := range t.Outside {
			if !said[x.String()] {
				own = append(own, x.String())
			}
		}
		if len(own) > 0 {
			parts = append(parts, fmt.Sprintf("compare target %s (%d× %s): %s", t.Name, t.GPUs, t.GPU, strings.Join(own, "; ")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "simulated numbers extrapolate the " + e.Calibration + ": " + strings.Join(parts, "; ")
}

// markExtrapolation copies the envelope's excursions onto the cost rows
// they concern: the chosen deployment's row when its numbers are simulated,
// and each compare target's (always simulated).
func markExtrapolation(sum *Summary) {
	e := sum.Envelope
	if e == nil || sum.Cost == nil {
		return
	}
	for i := range sum.Cost.Rows {
		r := &sum.Cost.Rows[i]
		if t, ok := e.Target(r.Option); ok {
			r.Extrapolates = t.Excursions()
			continue
		}
		if i == 0 && r.Provenance.Source != "live" {
			parts := make([]string, len(e.Outside))
			for j, x := range e.Outside {
				parts[j] = x.String()
			}
			r.Extrapolates = strings.Join(parts, "; ")
		}
	}
}

// TargetOutside is the compare target name's excursions in words: "" when
// it lies inside the envelope or was not checked.
func (e *Envelope) TargetOutside(name string) string {
	t, _ := e.Target(name)
	return t.Excursions()
}
