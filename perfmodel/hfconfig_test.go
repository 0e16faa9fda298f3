package perfmodel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readConfig(t *testing.T, file string) (Model, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ReadHFConfig(f, file)
}

func TestReadHFConfigMatchesCatalog(t *testing.T) {
	tests := []struct{ file, catalog string }{
		{"gpt-oss-120b.config.json", "gpt-oss-120b"},
		{"llama-3.1-8b.config.json", "llama-3.1-8b"},
		{"qwen3-30b-a3b.config.json", "qwen3-30b-a3b"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := readConfig(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := LookupModel(tc.catalog)
			if err != nil {
				t.Fatal(err)
			}
			got.Name = want.Name
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parsed\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestReadHFConfigLayouts(t *testing.T) {
	m, err := readConfig(t, "mistral-7b-v0.1.config.json")
	if err != nil {
		t.Fatal(err)
	}
	if m.SlidingLayers() != 32 || m.SlidingWindow != 4096 || m.HeadDim != 128 {
		t.Errorf("mistral: sliding layers %d window %d head dim %d; want 32, 4096, 128", m.SlidingLayers(), m.SlidingWindow, m.HeadDim)
	}
	m, err = readConfig(t, "multimodal-text-config.config.json")
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers != 4 || m.FullLayers() != 1 || m.SlidingWindow != 512 || m.NumKVHeads != 2 {
		t.Errorf("text_config: %+v", m)
	}
}

func TestReadHFConfigErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"syntax with line", "{\n\"hidden_size\": 1,\n,}", "line 3"},
		{"missing layers", `{"hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10}`, `missing field "num_hidden_layers"`},
		{"wrong type", "{\n\"num_hidden_layers\": \"many\"}", `field "num_hidden_layers"`},
		{"layer type", `{"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10,
			"intermediate_size": 16, "sliding_window": 4, "layer_types": ["full_attention", "mamba"]}`, `unknown layer type "mamba"`},
		{"layer types count", `{"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10,
			"intermediate_size": 16, "layer_types": ["full_attention"]}`, "1 entries for 2 layers"},
		{"window type", `{"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10,
			"intermediate_size": 16, "sliding_window": "big"}`, `"sliding_window"`},
		{"quant method", `{"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10,
			"intermediate_size": 16, "quantization_config": {"quant_method": "hqq"}}`, `"hqq" is not supported`},
		{"moe without k", `{"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10,
			"num_experts": 4, "moe_intermediate_size": 4}`, "num_experts_per_tok 0"},
		{"not an object", `[1, 2]`, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadHFConfig(strings.NewReader(tc.json), "cfg.json")
			if err == nil {
				t.Fatal("accepted invalid config")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cfg.json") {
				t.Errorf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
	if _, err := readConfig(t, "bad-syntax.config.json"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad-syntax fixture: %v, want line 3", err)
	}
}

func FuzzReadHFConfig(f *testing.F) {
	for _, name := range []string{"gpt-oss-120b", "llama-3.1-8b", "qwen3-30b-a3b", "mistral-7b-v0.1", "multimodal-text-config"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadHFConfig(strings.NewReader(string(data)), "fuzz.json")
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("ReadHFConfig returned an invalid model: %v", err)
		}
		// Whatever parses must price a step without NaN.
		g, _ := LookupGPU("h100")
		if m.Layers > 1000 || m.HiddenSize > 1<<16 || m.NumAttentionHeads > 1<<10 {
			return
		}
		s, err := NewSystem(m, g, SystemOptions{})
		if err != nil {
			return
		}
		c := s.Step([]Seq{{NewTokens: 3, ContextTokens: 5}, {NewTokens: 1, ContextTokens: 100}})
		if !(c.Seconds > 0) {
			t.Fatalf("step of a parsed model costs %g seconds", c.Seconds)
		}
	})
}
