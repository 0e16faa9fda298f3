package perfmodel

import (
	"fmt"
	"slices"
	"strings"
)

// IntRange is a closed range of integers.
type IntRange struct {
	Min int `json:"min" yaml:"min"`
	Max int `json:"max" yaml:"max"`
}

// Envelope is the range of operating conditions a calibration's measurements
// covered. A prediction outside it extrapolates the fitted fractions; Check
// says where and by how much.
type Envelope struct {
	// Models are the models measured (catalog names, lower case): factors
	// fitted on one model and applied to another extrapolate. Empty in a
	// calibration file written before the field existed: the model is then
	// unknown, and every plan says so.
	Models []string `json:"models,omitempty" yaml:"models,omitempty"`
	// GPUs and Engines are the GPUs and engine versions measured (lower case).
	GPUs    []string `json:"gpus" yaml:"gpus"`
	Engines []string `json:"engines" yaml:"engines"`
	// TensorParallel is the range of tensor-parallel sizes.
	TensorParallel IntRange `json:"tensor_parallel" yaml:"tensor_parallel"`
	// PromptTokens and OutputTokens are the per-request lengths measured.
	PromptTokens IntRange `json:"prompt_tokens" yaml:"prompt_tokens"`
	OutputTokens IntRange `json:"output_tokens" yaml:"output_tokens"`
	// Concurrency is the range of requests in flight (closed-loop clients).
	Concurrency IntRange `json:"concurrency" yaml:"concurrency"`
	// PrefixCaching lists the prefix-caching settings measured.
	PrefixCaching []bool `json:"prefix_caching" yaml:"prefix_caching"`
	// MultiTurn is true when sessions of several turns were measured.
	MultiTurn bool `json:"multi_turn" yaml:"multi_turn"`
}

// OperatingPoint is what a plan asks of the cost model.
type OperatingPoint struct {
	// Model is the catalog name of the model simulated.
	Model          string
	GPU            string
	TensorParallel int
	// PromptTokens is the range of prompt lengths the workload sends.
	PromptTokens IntRange
	// OutputTokens is the range of output budgets.
	OutputTokens IntRange
	// Concurrency is the largest number of requests that may be in flight.
	Concurrency   int
	PrefixCaching bool
	MultiTurn     bool
}

// Excursion is one dimension of an operating point outside the envelope.
type Excursion struct {
	// Dimension is "model", "prompt length", "output length",
	// "concurrency", "tensor parallel", "prefix caching", "multi-turn
	// sessions" or "gpu".
	Dimension string `json:"dimension"`
	// Value and Fitted describe the point and the envelope in words.
	Value  string `json:"value"`
	Fitted string `json:"fitted"`
	// Factor is how far outside a numeric dimension lies: value ÷ the
	// envelope's maximum above it, the envelope's minimum ÷ value below it;
	// 0 for a dimension that is a setting, not a number.
	Factor float64 `json:"factor,omitempty"`
}

// String is "prompt length 131072 tokens outside 819–8192 (16×)".
func (x Excursion) String() string {
	s := fmt.Sprintf("%s %s outside the calibration's %s", x.Dimension, x.Value, x.Fitted)
	if x.Factor > 0 {
		s += fmt.Sprintf(" (%.3g×)", x.Factor)
	}
	return s
}

// Check lists the dimensions in which op lies outside e, in a fixed order.
func (e Envelope) Check(op OperatingPoint) []Excursion {
	var out []Excursion
	rng := func(dim, unit string, got IntRange, fit IntRange) {
		if fit.Max == 0 || got.Max == 0 {
			return
		}
		fitted := fmt.Sprintf("%d–%d%s", fit.Min, fit.Max, unit)
		switch {
		case got.Max > fit.Max:
			v := fmt.Sprintf("up to %d%s", got.Max, unit)
			if got.Min == got.Max {
				v = fmt.Sprintf("%d%s", got.Max, unit)
			}
			out = append(out, Excursion{Dimension: dim, Value: v, Fitted: fitted, Factor: float64(got.Max) / float64(fit.Max)})
		case got.Min > 0 && got.Min < fit.Min:
			out = append(out, Excursion{Dimension: dim, Value: fmt.Sprintf("down to %d%s", got.Min, unit), Fitted: fitted,
				Factor: float64(fit.Min) / float64(got.Min)})
		}
	}
	if m := modelKey(op.Model); m != "" {
		switch {
		case len(e.Models) == 0:
			out = append(out, Excursion{Dimension: "model", Value: op.Model, Fitted: "model not stated (a calibration written before the envelope named its model)"})
		case !slices.ContainsFunc(e.Models, func(s string) bool { return modelKey(s) == m }):
			out = append(out, Excursion{Dimension: "model", Value: op.Model, Fitted: strings.Join(e.Models, ", ") + " (factors transferred to another model)"})
		}
	}
	if g := strings.ToLower(op.GPU); g != "" && len(e.GPUs) > 0 && !slices.ContainsFunc(e.GPUs, func(s string) bool { return gpuMatches(s, g) }) {
		out = append(out, Excursion{Dimension: "gpu", Value: op.GPU, Fitted: strings.Join(e.GPUs, ", ") + " (transferred by achieved fractions)"})
	}
	rng("tensor parallel", "", IntRange{op.TensorParallel, op.TensorParallel}, e.TensorParallel)
	rng("prompt length", " tokens", op.PromptTokens, e.PromptTokens)
	rng("output length", " tokens", op.OutputTokens, e.OutputTokens)
	rng("concurrency", " requests", IntRange{op.Concurrency, op.Concurrency}, e.Concurrency)
	if len(e.PrefixCaching) > 0 && !slices.Contains(e.PrefixCaching, op.PrefixCaching) {
		out = append(out, Excursion{Dimension: "prefix caching", Value: onOff(op.PrefixCaching), Fitted: onOff(e.PrefixCaching[0]) + " only"})
	}
	if op.MultiTurn && !e.MultiTurn {
		out = append(out, Excursion{Dimension: "multi-turn sessions", Value: "yes", Fitted: "single-turn requests only"})
	}
	return out
}

// modelKey is a model name without its organisation, in lower case:
// "openai/gpt-oss-120b" and "gpt-oss-120b" are the same model.
func modelKey(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// gpuMatches compares a catalog name with a short measurement name ("h100"
// matches "H100-SXM").
func gpuMatches(fitted, name string) bool {
	g, err := LookupGPU(fitted)
	if err != nil {
		return strings.EqualFold(fitted, name)
	}
	h, err := LookupGPU(name)
	return err == nil && g.Name == h.Name
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
