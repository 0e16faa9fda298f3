package perfmodel

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// AttentionKind says which keys a layer's queries attend to.
type AttentionKind uint8

// Attention kinds.
const (
	// FullAttention layers attend to the whole context; their KV cache grows with it.
	FullAttention AttentionKind = iota
	// SlidingAttention layers attend to the last Model.SlidingWindow tokens only;
	// their KV cache is capped at the window.
	SlidingAttention
)

// Quantization describes the checkpoint's quantized weights.
type Quantization struct {
	// Method is the Hugging Face quant_method ("mxfp4", "fp8", ...); empty for an
	// unquantized checkpoint.
	Method string
	// Format is the checkpoint's storage format of the quantized weights.
	Format WeightFormat
	// ExpertsOnly is true when only MoE expert weights are quantized and
	// attention, router, embeddings and LM head stay in BF16 (gpt-oss).
	ExpertsOnly bool
}

// Model is the architecture of a decoder-only transformer, as far as the cost
// model needs it. Counts are for the whole model (before tensor parallelism).
type Model struct {
	Name                string
	Layers              int
	HiddenSize          int
	NumAttentionHeads   int
	NumKVHeads          int
	HeadDim             int
	IntermediateSize    int // dense SwiGLU MLP width; used by dense layers
	NumExperts          int // routed experts per MoE layer; 0 for a dense model
	ExpertsPerToken     int // top-k
	MoEIntermediateSize int // width of one routed expert
	SharedExpertSize    int // total width of always-active shared experts, 0 if none
	FirstDenseLayers    int // leading layers with a dense MLP in an MoE model
	SlidingWindow       int // tokens; 0 when no layer slides
	// LayerTypes gives each layer's attention kind; nil means every layer is
	// FullAttention.
	LayerTypes        []AttentionKind
	VocabSize         int
	MaxContext        int
	TieWordEmbeddings bool
	Quantization      Quantization
}

// Validate reports the first inconsistent or missing field.
func (m *Model) Validate() error {
	checks := []struct {
		name string
		v    int
	}{
		{"num_hidden_layers", m.Layers}, {"hidden_size", m.HiddenSize},
		{"num_attention_heads", m.NumAttentionHeads}, {"num_key_value_heads", m.NumKVHeads},
		{"head_dim", m.HeadDim}, {"vocab_size", m.VocabSize},
	}
	for _, c := range checks {
		if c.v <= 0 {
			return fmt.Errorf("model %q: %s must be positive, got %d", m.Name, c.name, c.v)
		}
	}
	if m.NumAttentionHeads%m.NumKVHeads != 0 {
		return fmt.Errorf("model %q: num_attention_heads %d is not a multiple of num_key_value_heads %d",
			m.Name, m.NumAttentionHeads, m.NumKVHeads)
	}
	if m.NumExperts < 0 || m.ExpertsPerToken < 0 || m.MoEIntermediateSize < 0 || m.IntermediateSize < 0 ||
		m.SharedExpertSize < 0 || m.FirstDenseLayers < 0 || m.SlidingWindow < 0 || m.MaxContext < 0 {
		return fmt.Errorf("model %q: negative size field", m.Name)
	}
	if m.NumExperts > 0 {
		if m.ExpertsPerToken <= 0 || m.ExpertsPerToken > m.NumExperts {
			return fmt.Errorf("model %q: num_experts_per_tok %d must be in [1, %d]", m.Name, m.ExpertsPerToken, m.NumExperts)
		}
		if m.MoEIntermediateSize <= 0 {
			return fmt.Errorf("model %q: moe_intermediate_size must be positive for an MoE model", m.Name)
		}
		if m.FirstDenseLayers > m.Layers {
			return fmt.Errorf("model %q: first_k_dense_replace %d exceeds %d layers", m.Name, m.FirstDenseLayers, m.Layers)
		}
	}
	if m.denseLayers() > 0 && m.IntermediateSize <= 0 {
		return fmt.Errorf("model %q: intermediate_size must be positive for dense MLP layers", m.Name)
	}
	if m.LayerTypes != nil && len(m.LayerTypes) != m.Layers {
		return fmt.Errorf("model %q: layer_types has %d entries for %d layers", m.Name, len(m.LayerTypes), m.Layers)
	}
	if m.SlidingLayers() > 0 && m.SlidingWindow <= 0 {
		return fmt.Errorf("model %q: sliding layers need a positive sliding_window", m.Name)
	}
	return nil
}

// IsMoE reports whether the model routes tokens to experts.
func (m *Model) IsMoE() bool { return m.NumExperts > 0 }

// moeLayers is the number of layers whose MLP is a routed-expert block.
func (m *Model) moeLayers() int {
	if !m.IsMoE() {
		return 0
	}
	return m.Layers - m.FirstDenseLayers
}

// denseLayers is the number of layers whose MLP is a dense SwiGLU block.
func (m *Model) denseLayers() int { return m.Layers - m.moeLayers() }

// SlidingLayers is the number of sliding-window attention layers.
func (m *Model) SlidingLayers() int {
	n := 0
	for _, k := range m.LayerTypes {
		if k == SlidingAttention {
			n++
		}
	}
	return n
}

// FullLayers is the number of full-attention layers.
func (m *Model) FullLayers() int { return m.Layers - m.SlidingLayers() }

// attentionParams is the weight count of one layer's Q, K, V and O projections.
func (m *Model) attentionParams() float64 {
	h, d := float64(m.HiddenSize), float64(m.HeadDim)
	q, kv := float64(m.NumAttentionHeads)*d, float64(m.NumKVHeads)*d
	return h*(q+2*kv) + q*h
}

// expertParams is the weight count of one routed expert (gate, up, down).
func (m *Model) expertParams() float64 {
	return 3 * float64(m.HiddenSize) * float64(m.MoEIntermediateSize)
}

// ParamCounts splits the model's weights by where the cost model puts them.
type ParamCounts struct {
	Attention  float64 // Q/K/V/O projections, all layers
	DenseMLP   float64 // dense MLPs and shared experts, all layers
	Router     float64 // MoE gates
	Experts    float64 // routed experts, all layers
	Embeddings float64 // input embedding plus untied LM head
	Total      float64
	// ActivePerToken counts the weights one token multiplies: everything but
	// the unused experts and the input embedding table.
	ActivePerToken float64
}

// Params counts the model's weights.
func (m *Model) Params() ParamCounts {
	h := float64(m.HiddenSize)
	var p ParamCounts
	p.Attention = float64(m.Layers) * m.attentionParams()
	p.DenseMLP = float64(m.denseLayers())*3*h*float64(m.IntermediateSize) +
		float64(m.moeLayers())*3*h*float64(m.SharedExpertSize)
	p.Router = float64(m.moeLayers()) * h * float64(m.NumExperts)
	p.Experts = float64(m.moeLayers()) * float64(m.NumExperts) * m.expertParams()
	emb := float64(m.VocabSize) * h
	p.Embeddings = emb
	if !m.TieWordEmbeddings {
		p.Embeddings += emb
	}
	p.Total = p.Attention + p.DenseMLP + p.Router + p.Experts + p.Embeddings
	p.ActivePerToken = p.Attention + p.DenseMLP + p.Router + emb +
		float64(m.moeLayers())*float64(m.ExpertsPerToken)*m.expertParams()
	return p
}

// KVBytesPerTokenPerLayer is the K plus V cache of one token in one layer for
// the whole model (all KV heads), at the given element size.
func (m *Model) KVBytesPerTokenPerLayer(elem float64) float64 {
	return 2 * float64(m.NumKVHeads) * float64(m.HeadDim) * elem
}

func alternating(n int, first AttentionKind) []AttentionKind {
	t := make([]AttentionKind, n)
	for i := range t {
		if i%2 == 0 {
			t[i] = first
		} else {
			t[i] = 1 - first
		}
	}
	return t
}

// builtinModels returns fresh copies of the catalog, keyed by lower-case name.
// Sources: each model's config.json on huggingface.co (docs/perfmodel.md).
func builtinModels() map[string]Model {
	mxfp4 := Quantization{Method: "mxfp4", Format: FormatFP4, ExpertsOnly: true}
	ms := []Model{
		{Name: "openai/gpt-oss-120b", Layers: 36, HiddenSize: 2880, NumAttentionHeads: 64, NumKVHeads: 8, HeadDim: 64,
			IntermediateSize: 2880, NumExperts: 128, ExpertsPerToken: 4, MoEIntermediateSize: 2880,
			SlidingWindow: 128, LayerTypes: alternating(36, SlidingAttention), VocabSize: 201088, MaxContext: 131072,
			Quantization: mxfp4},
		{Name: "openai/gpt-oss-20b", Layers: 24, HiddenSize: 2880, NumAttentionHeads: 64, NumKVHeads: 8, HeadDim: 64,
			IntermediateSize: 2880, NumExperts: 32, ExpertsPerToken: 4, MoEIntermediateSize: 2880,
			SlidingWindow: 128, LayerTypes: alternating(24, SlidingAttention), VocabSize: 201088, MaxContext: 131072,
			Quantization: mxfp4},
		{Name: "meta-llama/Llama-3.1-8B-Instruct", Layers: 32, HiddenSize: 4096, NumAttentionHeads: 32, NumKVHeads: 8,
			HeadDim: 128, IntermediateSize: 14336, VocabSize: 128256, MaxContext: 131072},
		{Name: "meta-llama/Llama-3.1-70B-Instruct", Layers: 80, HiddenSize: 8192, NumAttentionHeads: 64, NumKVHeads: 8,
			HeadDim: 128, IntermediateSize: 28672, VocabSize: 128256, MaxContext: 131072},
		{Name: "Qwen/Qwen3-30B-A3B", Layers: 48, HiddenSize: 2048, NumAttentionHeads: 32, NumKVHeads: 4, HeadDim: 128,
			IntermediateSize: 6144, NumExperts: 128, ExpertsPerToken: 8, MoEIntermediateSize: 768,
			VocabSize: 151936, MaxContext: 40960},
	}
	out := make(map[string]Model, len(ms))
	for _, m := range ms {
		out[strings.ToLower(m.Name)] = m
	}
	return out
}

// ErrUnknown is returned (wrapped) by LookupModel and LookupGPU for names not in
// the catalog.
var ErrUnknown = errors.New("not in the catalog")

// LookupModel finds a built-in model by its Hugging Face id or by the part after
// the slash, case-insensitively ("gpt-oss-120b", "openai/gpt-oss-120b",
// "llama-3.1-8b" for Llama-3.1-8B-Instruct). An unknown name fails with an
// *UnknownNameError.
func LookupModel(name string) (Model, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	cat := builtinModels()
	if m, ok := cat[key]; ok {
		return m, nil
	}
	for k, m := range cat {
		short := k[strings.IndexByte(k, '/')+1:]
		if short == key || strings.TrimSuffix(short, "-instruct") == key {
			return m, nil
		}
	}
	return Model{}, &UnknownNameError{Kind: "model", Name: name, Known: ModelNames()}
}

// ModelNames lists the built-in models' Hugging Face ids, sorted.
func ModelNames() []string {
	var names []string
	for _, m := range builtinModels() {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	return names
}
