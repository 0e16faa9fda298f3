package perfmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// hfConfig holds the config.json fields the cost model reads. Pointers tell a
// missing field from a zero one.
type hfConfig struct {
	ModelType             string          `json:"model_type"`
	NameOrPath            string          `json:"_name_or_path"`
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	HiddenSize            *int            `json:"hidden_size"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	IntermediateSize      *int            `json:"intermediate_size"`
	NumLocalExperts       *int            `json:"num_local_experts"`
	NumExperts            *int            `json:"num_experts"`
	NRoutedExperts        *int            `json:"n_routed_experts"`
	NumExpertsPerTok      *int            `json:"num_experts_per_tok"`
	MoEIntermediateSize   *int            `json:"moe_intermediate_size"`
	SharedExpertSize      *int            `json:"shared_expert_intermediate_size"`
	NSharedExperts        *int            `json:"n_shared_experts"`
	FirstKDenseReplace    *int            `json:"first_k_dense_replace"`
	SlidingWindow         json.RawMessage `json:"sliding_window"`
	UseSlidingWindow      *bool           `json:"use_sliding_window"`
	LayerTypes            []string        `json:"layer_types"`
	VocabSize             *int            `json:"vocab_size"`
	MaxPositionEmbeddings *int            `json:"max_position_embeddings"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	QuantizationConfig    *struct {
		QuantMethod          string   `json:"quant_method"`
		ModulesToNotConvert  []string `json:"modules_to_not_convert"`
		Bits                 int      `json:"bits"`
		WBit                 int      `json:"w_bit"`
		ModulesToNotQuantize []string `json:"ignored_layers"`
	} `json:"quantization_config"`
	TextConfig json.RawMessage `json:"text_config"`
}

// maxConfigBytes bounds how much of a config.json is read; real ones are a few KB.
const maxConfigBytes = 4 << 20

// ReadHFConfig parses a Hugging Face config.json into a Model. name is used
// in error messages and as the model's name when the file does not carry one.
// Multimodal configs with a "text_config" are read from that section.
func ReadHFConfig(r io.Reader, name string) (Model, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxConfigBytes+1))
	if err != nil {
		return Model{}, fmt.Errorf("read model config %s: %w", name, err)
	}
	if len(data) > maxConfigBytes {
		return Model{}, fmt.Errorf("read model config %s: larger than %d bytes", name, maxConfigBytes)
	}
	var c hfConfig
	if err := decodeJSON(data, &c); err != nil {
		return Model{}, fmt.Errorf("parse model config %s: %w", name, err)
	}
	if c.NumHiddenLayers == nil && len(c.TextConfig) > 0 && string(c.TextConfig) != "null" {
		var inner hfConfig
		if err := decodeJSON(c.TextConfig, &inner); err != nil {
			return Model{}, fmt.Errorf("parse model config %s: text_config: %w", name, err)
		}
		if inner.QuantizationConfig == nil {
			inner.QuantizationConfig = c.QuantizationConfig
		}
		c = inner
	}
	m, err := c.model(name)
	if err != nil {
		return Model{}, fmt.Errorf("model config %s: %w", name, err)
	}
	if err := m.Validate(); err != nil {
		return Model{}, fmt.Errorf("model config %s: %w", name, err)
	}
	return m, nil
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return fmt.Errorf("line %d: %w", line, err)
		}
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			line := 1 + bytes.Count(data[:min(int(te.Offset), len(data))], []byte("\n"))
			return fmt.Errorf("line %d: field %q: %w", line, te.Field, err)
		}
		return err
	}
	return nil
}

func required(field string, p *int) (int, error) {
	if p == nil {
		return 0, fmt.Errorf("missing field %q", field)
	}
	return *p, nil
}

func optional(ps ...*int) int {
	for _, p := range ps {
		if p != nil {
			return *p
		}
	}
	return 0
}

func (c *hfConfig) model(name string) (Model, error) {
	m := Model{Name: name}
	if c.NameOrPath != "" {
		m.Name = c.NameOrPath
	}
	var err error
	if m.Layers, err = required("num_hidden_layers", c.NumHiddenLayers); err != nil {
		return m, err
	}
	if m.HiddenSize, err = required("hidden_size", c.HiddenSize); err != nil {
		return m, err
	}
	if m.NumAttentionHeads, err = required("num_attention_heads", c.NumAttentionHeads); err != nil {
		return m, err
	}
	if m.VocabSize, err = required("vocab_size", c.VocabSize); err != nil {
		return m, err
	}
	m.NumKVHeads = m.NumAttentionHeads // multi-head attention when the field is absent
	if c.NumKeyValueHeads != nil {
		m.NumKVHeads = *c.NumKeyValueHeads
	}
	if c.HeadDim != nil && *c.HeadDim > 0 {
		m.HeadDim = *c.HeadDim
	} else if m.NumAttentionHeads > 0 {
		m.HeadDim = m.HiddenSize / m.NumAttentionHeads
	}
	m.IntermediateSize = optional(c.IntermediateSize)
	m.NumExperts = optional(c.NumLocalExperts, c.NumExperts, c.NRoutedExperts)
	if m.NumExperts > 0 {
		m.ExpertsPerToken = optional(c.NumExpertsPerTok)
		// gpt-oss and Mixtral give the expert width as intermediate_size.
		m.MoEIntermediateSize = optional(c.MoEIntermediateSize, c.IntermediateSize)
		m.SharedExpertSize = optional(c.SharedExpertSize)
		if m.SharedExpertSize == 0 && c.NSharedExperts != nil {
			m.SharedExpertSize = *c.NSharedExperts * m.MoEIntermediateSize
		}
		m.FirstDenseLayers = optional(c.FirstKDenseReplace)
	}
	m.MaxContext = optional(c.MaxPositionEmbeddings)
	m.TieWordEmbeddings = c.TieWordEmbeddings != nil && *c.TieWordEmbeddings
	if err := c.attentionLayout(&m); err != nil {
		return m, err
	}
	if q := c.QuantizationConfig; q != nil {
		m.Quantization.Method = strings.ToLower(q.QuantMethod)
		switch m.Quantization.Method {
		case "mxfp4", "nvfp4", "modelopt_fp4":
			m.Quantization.Format = FormatFP4
		case "fp8", "fbgemm_fp8":
			m.Quantization.Format = FormatFP8
		case "awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes":
			m.Quantization.Format = FormatW4A16
		default:
			return m, fmt.Errorf("quantization_config.quant_method %q is not supported (want mxfp4, fp8, awq or gptq)", q.QuantMethod)
		}
		for _, mod := range append(q.ModulesToNotConvert, q.ModulesToNotQuantize...) {
			if strings.Contains(mod, "self_attn") || strings.Contains(mod, "attn") {
				m.Quantization.ExpertsOnly = m.NumExperts > 0
			}
		}
	}
	return m, nil
}

// attentionLayout fills SlidingWindow and LayerTypes from sliding_window,
// use_sliding_window and layer_types.
func (c *hfConfig) attentionLayout(m *Model) error {
	if len(c.SlidingWindow) > 0 && string(c.SlidingWindow) != "null" {
		var w int
		if err := json.Unmarshal(c.SlidingWindow, &w); err != nil {
			return fmt.Errorf("field \"sliding_window\": want an integer or null: %w", err)
		}
		m.SlidingWindow = w
	}
	if c.UseSlidingWindow != nil && !*c.UseSlidingWindow && c.LayerTypes == nil {
		m.SlidingWindow = 0 // Qwen-style configs carry a window they do not use
	}
	if c.LayerTypes != nil {
		if len(c.LayerTypes) != m.Layers {
			return fmt.Errorf("field \"layer_types\": %d entries for %d layers", len(c.LayerTypes), m.Layers)
		}
		m.LayerTypes = make([]AttentionKind, len(c.LayerTypes))
		for i, t := range c.LayerTypes {
			switch t {
			case "full_attention", "attention", "global":
				m.LayerTypes[i] = FullAttention
			case "sliding_attention", "sliding_window", "local", "chunked_attention":
				m.LayerTypes[i] = SlidingAttention
			default:
				return fmt.Errorf("field \"layer_types\"[%d]: unknown layer type %q", i, t)
			}
		}
		if m.SlidingLayers() == 0 {
			m.SlidingWindow = 0
		}
		return nil
	}
	if m.SlidingWindow > 0 && (m.MaxContext == 0 || m.SlidingWindow < m.MaxContext) {
		m.LayerTypes = make([]AttentionKind, m.Layers) // every layer slides (Mistral 7B v0.1)
		for i := range m.LayerTypes {
			m.LayerTypes[i] = SlidingAttention
		}
	} else {
		m.SlidingWindow = 0
	}
	return nil
}
