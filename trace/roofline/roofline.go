package roofline

import (
	"errors"
	"fmt"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/trace"
)

// BatchMix is the steady-state batch one engine step processes: decode
// sequences plus, optionally, one chunked-prefill chunk.
type BatchMix struct {
	// DecodeSeqs sequences decode one token each with DecodeContext tokens
	// already cached.
	DecodeSeqs    int `json:"decode_seqs"`
	DecodeContext int `json:"decode_context"`
	// PrefillTokens is the size of a prefill chunk in the step (0: none),
	// over PrefillContext tokens already cached (a prefix-cache hit or the
	// earlier chunks).
	PrefillTokens  int `json:"prefill_tokens"`
	PrefillContext int `json:"prefill_context"`
	// Assumed names the fields that were not measured but assumed (a plan
	// without engine telemetry prices 64 decoding sequences, say): the
	// comparison then rests on those values, not on the run's.
	Assumed []string `json:"assumed,omitempty"`
}

// Validate rejects an empty or negative mix.
func (m BatchMix) Validate() error {
	if m.DecodeSeqs < 0 || m.DecodeContext < 0 || m.PrefillTokens < 0 || m.PrefillContext < 0 {
		return fmt.Errorf("batch mix %+v: negative value", m)
	}
	if m.DecodeSeqs == 0 && m.PrefillTokens == 0 {
		return errors.New("batch mix: no decode sequences and no prefill tokens")
	}
	return nil
}

// Batch returns the mix as perfmodel sequences.
func (m BatchMix) Batch() []perfmodel.Seq {
	batch := make([]perfmodel.Seq, 0, m.DecodeSeqs+1)
	for range m.DecodeSeqs {
		batch = append(batch, perfmodel.Seq{NewTokens: 1, ContextTokens: m.DecodeContext})
	}
	if m.PrefillTokens > 0 {
		batch = append(batch, perfmodel.Seq{NewTokens: m.PrefillTokens, ContextTokens: m.PrefillContext})
	}
	return batch
}

// DefaultModel is the model --predict assumes: the reference deployment.
const DefaultModel = "openai/gpt-oss-120b"

// Assumption is a named weight format to predict under.
type Assumption struct {
	Name   string
	Format perfmodel.WeightFormat
}

// DefaultAssumptions are W4A16 (what vLLM runs MXFP4 experts as on Hopper)
// and FP4 (native FP4 math).
var DefaultAssumptions = []Assumption{{"W4A16", perfmodel.FormatW4A16}, {"FP4", perfmodel.FormatFP4}}

// Prediction is perfmodel's view of one step under one assumption.
type Prediction struct {
	Assumption string `json:"assumption"`
	// HypotheticalFP4 is set when the GPU has no FP4 tensor cores and the
	// prediction assumed an FP4 peak of twice its FP8 peak.
	HypotheticalFP4 bool            `json:"hypothetical_fp4,omitempty"`
	StepSeconds     float64         `json:"step_seconds"`
	Terms           perfmodel.Terms `json:"terms"`
	// Split is the predicted kernel time by trace.Compare key: attention,
	// gemm, moe, communication and misc (perfmodel's elementwise and sampling
	// term). perfmodel's overhead term (CPU time and launch gaps) is not
	// kernel time; see OverheadShare.
	Split map[string]float64 `json:"split"`
	// OverheadShare is the overhead term over the step time: the predicted
	// fraction of the step the GPU has nothing to run, to set beside the
	// measured idle fraction.
	OverheadShare float64 `json:"overhead_share"`
}

// Split maps perfmodel terms onto trace.Compare keys.
func Split(t perfmodel.Terms) map[string]float64 {
	return map[string]float64{
		string(trace.Attention):     t.Attention,
		string(trace.GEMM):          t.DenseGEMM,
		"moe":                       t.MoE,
		string(trace.Communication): t.Communication,
		"misc":                      t.Other,
	}
}

// Predict prices one step of mix for model on gpu under each assumption.
// opts carries the deployment (tensor parallelism, CUDA graphs, …); its
// WeightFormat is overridden by each assumption.
func Predict(model perfmodel.Model, gpu perfmodel.GPU, opts perfmodel.SystemOptions, mix BatchMix, assumptions []Assumption) ([]Prediction, error) {
	if err := mix.Validate(); err != nil {
		return nil, err
	}
	if len(assumptions) == 0 {
		assumptions = DefaultAssumptions
	}
	batch := mix.Batch()
	out := make([]Prediction, 0, len(assumptions))
	for _, a := range assumptions {
		g, hypothetical := gpu, false
		if a.Format == perfmodel.FormatFP4 && g.FP4FLOPS == 0 {
			// The naive "all FP4" roofline: as if the GPU had FP4 tensor
			// cores one generation ahead of its FP8 ones.
			g.FP4FLOPS = 2 * max(g.FP8FLOPS, 2*g.BF16FLOPS)
			g.Name += " (hypothetical FP4)"
			hypothetical = true
		}
		o := opts
		o.WeightFormat = a.Format
		sys, err := perfmodel.NewSystem(model, g, o)
		if err != nil {
			return nil, fmt.Errorf("predict %s step of %s on %s: %w", a.Name, model.Name, gpu.Name, err)
		}
		cost := sys.Step(batch)
		if cost.Seconds <= 0 {
			return nil, fmt.Errorf("predict %s step of %s on %s: zero step time", a.Name, model.Name, gpu.Name)
		}
		out = append(out, Prediction{
			Assumption:      a.Name,
			HypotheticalFP4: hypothetical,
			StepSeconds:     cost.Seconds,
			Terms:           cost.Terms,
			Split:           Split(cost.Terms),
			OverheadShare:   cost.Terms.Overhead / cost.Seconds,
		})
	}
	return out, nil
}

// Comparison is one prediction set beside a measured breakdown.
type Comparison struct {
	Prediction Prediction        `json:"prediction"`
	Comparison *trace.Comparison `json:"comparison"`
}

// Compare compares each prediction with the measured breakdown.
func Compare(measured *trace.Breakdown, preds []Prediction) ([]Comparison, error) {
	out := make([]Comparison, 0, len(preds))
	for _, p := range preds {
		c, err := trace.Compare(measured, p.Split)
		if err != nil {
			return nil, fmt.Errorf("compare with %s prediction: %w", p.Assumption, err)
		}
		out = append(out, Comparison{Prediction: p, Comparison: c})
	}
	return out, nil
}
