package perfmodel

import (
	"errors"
	"math"
	"testing"
)

func near(got, want, relTol float64) bool {
	if want == 0 {
		return math.Abs(got) <= relTol
	}
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

// Published totals: gpt-oss model card (116.8B total, 5.13B active for 120b;
// 20.9B / 3.6B for 20b), Llama 3.1 (8.03B, 70.6B), Qwen3-30B-A3B (30.5B, 3.3B).
func TestCatalogParamCounts(t *testing.T) {
	tests := []struct {
		name          string
		total, active float64
	}{
		{"gpt-oss-120b", 116.8e9, 5.13e9},
		{"gpt-oss-20b", 20.9e9, 3.6e9},
		{"llama-3.1-8b", 8.03e9, 8.03e9 - 128256*4096},
		{"meta-llama/Llama-3.1-70B-Instruct", 70.6e9, 70.6e9 - 128256*8192},
		{"qwen3-30b-a3b", 30.5e9, 3.3e9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := LookupModel(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			p := m.Params()
			if !near(p.Total, tc.total, 0.02) {
				t.Errorf("total params %.4g, want %.4g ±2%%", p.Total, tc.total)
			}
			// Active excludes the input embedding table (a lookup, not a GEMM).
			if !near(p.ActivePerToken, tc.active, 0.10) {
				t.Errorf("active params %.4g, want %.4g ±10%%", p.ActivePerToken, tc.active)
			}
		})
	}
}

func TestGptOssLayout(t *testing.T) {
	m, err := LookupModel("openai/gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	if m.FullLayers() != 18 || m.SlidingLayers() != 18 || m.LayerTypes[0] != SlidingAttention {
		t.Errorf("full %d sliding %d first %v; want 18/18 starting sliding", m.FullLayers(), m.SlidingLayers(), m.LayerTypes[0])
	}
	// 2 (K,V) × 8 heads × 64 dims × 2 bytes.
	if got := m.KVBytesPerTokenPerLayer(2); got != 2048 {
		t.Errorf("KV bytes per token per layer %g, want 2048", got)
	}
}

func TestLookupModelUnknown(t *testing.T) {
	_, err := LookupModel("no-such-model")
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("err %v, want ErrUnknown", err)
	}
}

func TestModelValidate(t *testing.T) {
	base, _ := LookupModel("gpt-oss-20b")
	tests := []struct {
		name string
		edit func(*Model)
	}{
		{"no layers", func(m *Model) { m.Layers = 0 }},
		{"heads not multiple of kv heads", func(m *Model) { m.NumKVHeads = 7 }},
		{"top-k above experts", func(m *Model) { m.ExpertsPerToken = 33 }},
		{"no expert width", func(m *Model) { m.MoEIntermediateSize = 0 }},
		{"layer types length", func(m *Model) { m.LayerTypes = m.LayerTypes[:3] }},
		{"sliding without window", func(m *Model) { m.SlidingWindow = 0 }},
		{"negative window", func(m *Model) { m.SlidingWindow = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			m.LayerTypes = append([]AttentionKind(nil), base.LayerTypes...)
			tc.edit(&m)
			if err := m.Validate(); err == nil {
				t.Fatal("Validate accepted an invalid model")
			}
		})
	}
}
