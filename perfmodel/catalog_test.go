package perfmodel

import (
	"errors"
	"slices"
	"testing"
)

func TestResolveModel(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		unknown    bool // want an *UnknownNameError
		fails      bool // want another error (a file that cannot be read)
	}{
		{name: "gpt-oss-120b", want: "openai/gpt-oss-120b"},
		{name: "Qwen/Qwen3-30B-A3B", want: "Qwen/Qwen3-30B-A3B"},
		{name: "testdata/llama-3.1-8b.config.json", want: "testdata/llama-3.1-8b.config.json"},
		{name: "gpt-oss-12b", unknown: true},
		{name: "", unknown: true},
		{name: "testdata/missing.config.json", fails: true},
		{name: "testdata/bad-syntax.config.json", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ResolveModel(tc.name)
			var ue *UnknownNameError
			switch {
			case tc.unknown:
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnknown) || ue.Kind != "model" || !slices.Equal(ue.Known, ModelNames()) {
					t.Fatalf("err = %v, want an *UnknownNameError listing %v", err, ModelNames())
				}
			case tc.fails:
				if err == nil || errors.Is(err, ErrUnknown) {
					t.Fatalf("err = %v, want a file error that is not ErrUnknown", err)
				}
			case err != nil:
				t.Fatal(err)
			case m.Name != tc.want:
				t.Errorf("resolved %q, want %q", m.Name, tc.want)
			}
		})
	}
}

func TestResolveGPU(t *testing.T) {
	extra, err := ReadGPUCatalogFile("testdata/gpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if none, err := ReadGPUCatalogFile(""); none != nil || err != nil {
		t.Errorf("no catalog: %v, %v; want nothing", none, err)
	}
	if _, err := ReadGPUCatalogFile("testdata/missing.yaml"); err == nil {
		t.Error("a missing catalog file loaded")
	}
	for _, tc := range []struct {
		name  string
		extra []GPU
		want  string
	}{
		{"H100-SXM", nil, "H100-SXM"},
		{"h200", nil, "H200-SXM"},
		{"l40s", extra, "L40S"},
		{"h100", extra, "H100-SXM"},
	} {
		g, err := ResolveGPU(tc.name, tc.extra)
		if err != nil || g.Name != tc.want {
			t.Errorf("ResolveGPU(%q) = %q, %v; want %q", tc.name, g.Name, err, tc.want)
		}
	}
	_, err = ResolveGPU("L40", extra)
	var ue *UnknownNameError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnknown) || ue.Kind != "gpu" ||
		!slices.Contains(ue.Known, "L40S") || !slices.Contains(ue.Known, "H100-SXM") {
		t.Errorf("unknown GPU with a catalog: %v; want an *UnknownNameError listing catalog and built-in names", err)
	}
	if _, err := ResolveGPU("L40S", nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("catalog GPU resolved without the catalog: %v", err)
	}
}
