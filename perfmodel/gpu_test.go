package perfmodel

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestCatalogGPUs(t *testing.T) {
	for _, name := range GPUNames() {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for alias, want := range map[string]string{"h100": "H100-SXM", "H200": "H200-SXM", "a100": "A100-SXM-80GB", "B200": "B200"} {
		g, err := LookupGPU(alias)
		if err != nil || g.Name != want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", alias, g.Name, err, want)
		}
	}
	if _, err := LookupGPU("tpu"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown GPU: %v", err)
	}
	h100, _ := LookupGPU("h100")
	h200, _ := LookupGPU("h200")
	if h100.BF16FLOPS != h200.BF16FLOPS || h200.MemoryBandwidth <= h100.MemoryBandwidth || h200.HBMBytes <= h100.HBMBytes {
		t.Error("H200 should be an H100 with more and faster memory")
	}
}

func TestReadGPUs(t *testing.T) {
	f, err := os.Open("testdata/gpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gs, err := ReadGPUs(f, "gpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("%d GPUs, want 2", len(gs))
	}
	l := gs[0]
	if l.Name != "L40S" || l.HBMBytes != 44.4*gib || l.MemoryBandwidth != 864e9 || l.BF16FLOPS != 362e12 ||
		l.FP8FLOPS != 733e12 || l.SMCount != 142 || l.TDPWatts != 350 || l.BoostClockMHz != 2520 {
		t.Errorf("L40S parsed as %+v", l)
	}
	// A GPU read from YAML is usable by the cost model.
	m, _ := LookupModel("llama-3.1-8b")
	if _, err := NewSystem(m, l, SystemOptions{}); err != nil {
		t.Error(err)
	}
}

func TestReadGPUsErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "- name: x\n  hbm_gib: 1\n  memory_bandwidth_gb_s: 1\n  bf16_tflops: 1\n  hbm_gb: 3\n", `gpus.yaml:1: line 5: unknown field "hbm_gb"`},
		{"missing bandwidth", "- name: x\n  hbm_gib: 1\n  bf16_tflops: 1\n", "memory_bandwidth_gb_s must be positive"},
		{"negative", "- name: x\n  hbm_gib: 1\n  memory_bandwidth_gb_s: 1\n  bf16_tflops: 1\n  fp8_tflops: -1\n", "fp8_tflops must not be negative"},
		{"no name", "- hbm_gib: 1\n", "name is empty"},
		{"duplicate", "- {name: a, hbm_gib: 1, memory_bandwidth_gb_s: 1, bf16_tflops: 1}\n- {name: A, hbm_gib: 1, memory_bandwidth_gb_s: 1, bf16_tflops: 1}\n", "already defined at line 1"},
		{"top-level key", "accelerators: []\n", `unknown key "accelerators"`},
		{"not a list", "name: x\n", `unknown key "name"`},
		{"scalar", "7\n", "want a list"},
		{"empty", "", "empty document"},
		{"wrong type", "- name: x\n  sm_count: many\n", "cannot unmarshal"},
		{"clocks", "- {name: a, hbm_gib: 1, memory_bandwidth_gb_s: 1, bf16_tflops: 1, base_clock_mhz: 2000, boost_clock_mhz: 1000}\n", "exceeds boost_clock_mhz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadGPUs(strings.NewReader(tc.yaml), "gpus.yaml")
			if err == nil {
				t.Fatal("accepted invalid GPU file")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "gpus.yaml") {
				t.Errorf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
}

func FuzzReadGPUs(f *testing.F) {
	b, err := os.ReadFile("testdata/gpus.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("- {name: a, hbm_gib: 1, memory_bandwidth_gb_s: 1, bf16_tflops: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := ReadGPUs(strings.NewReader(string(data)), "fuzz.yaml")
		if err != nil {
			return
		}
		for _, g := range gs {
			if err := g.Validate(); err != nil {
				t.Fatalf("ReadGPUs returned an invalid GPU: %v", err)
			}
		}
	})
}
