package perfmodel

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// GPU is one accelerator's datasheet: peak rates the cost model scales by
// Factors. Rates are dense (no structured sparsity).
type GPU struct {
	Name string
	// HBMBytes is the device memory CUDA reports as total (nvidia-smi's
	// "Total" FB memory), a little below the marketing capacity.
	HBMBytes float64
	// MemoryBandwidth is peak HBM bandwidth in bytes/s.
	MemoryBandwidth float64
	// BF16FLOPS, FP8FLOPS and FP4FLOPS are dense tensor-core peaks in FLOP/s at
	// boost clock; zero when the GPU has no such tensor-core format.
	BF16FLOPS float64
	FP8FLOPS  float64
	FP4FLOPS  float64
	// NVLinkBandwidth is the per-GPU NVLink bandwidth in one direction, bytes/s
	// (half the bidirectional figure on datasheets).
	NVLinkBandwidth float64
	SMCount         int
	TDPWatts        float64
	BaseClockMHz    float64
	BoostClockMHz   float64
}

// Validate reports the first missing or impossible datasheet value.
func (g *GPU) Validate() error {
	if g.Name == "" {
		return errors.New("gpu: name is empty")
	}
	pos := []struct {
		field string
		v     float64
	}{
		{"hbm_gib", g.HBMBytes}, {"memory_bandwidth_gb_s", g.MemoryBandwidth}, {"bf16_tflops", g.BF16FLOPS},
	}
	for _, p := range pos {
		if !(p.v > 0) {
			return fmt.Errorf("gpu %q: %s must be positive", g.Name, p.field)
		}
	}
	nonneg := []struct {
		field string
		v     float64
	}{
		{"fp8_tflops", g.FP8FLOPS}, {"fp4_tflops", g.FP4FLOPS}, {"nvlink_gb_s", g.NVLinkBandwidth},
		{"sm_count", float64(g.SMCount)}, {"tdp_w", g.TDPWatts}, {"base_clock_mhz", g.BaseClockMHz},
		{"boost_clock_mhz", g.BoostClockMHz},
	}
	for _, p := range nonneg {
		if !(p.v >= 0) {
			return fmt.Errorf("gpu %q: %s must not be negative", g.Name, p.field)
		}
	}
	if g.BaseClockMHz > 0 && g.BoostClockMHz > 0 && g.BaseClockMHz > g.BoostClockMHz {
		return fmt.Errorf("gpu %q: base_clock_mhz %g exceeds boost_clock_mhz %g", g.Name, g.BaseClockMHz, g.BoostClockMHz)
	}
	return nil
}

const (
	gib  = 1 << 30
	mib  = 1 << 20
	tera = 1e12
	giga = 1e9
)

// builtinGPUs returns the catalog keyed by lower-case name. Sources are cited in
// docs/perfmodel.md (NVIDIA datasheets); HBM is the driver-reported total.
func builtinGPUs() map[string]GPU {
	gs := []GPU{
		{Name: "H100-SXM", HBMBytes: 81559 * mib, MemoryBandwidth: 3350 * giga, BF16FLOPS: 989.4 * tera,
			FP8FLOPS: 1978.9 * tera, NVLinkBandwidth: 450 * giga, SMCount: 132, TDPWatts: 700,
			BaseClockMHz: 1590, BoostClockMHz: 1980},
		{Name: "H200-SXM", HBMBytes: 143771 * mib, MemoryBandwidth: 4800 * giga, BF16FLOPS: 989.4 * tera,
			FP8FLOPS: 1978.9 * tera, NVLinkBandwidth: 450 * giga, SMCount: 132, TDPWatts: 700,
			BaseClockMHz: 1590, BoostClockMHz: 1980},
		{Name: "A100-SXM-80GB", HBMBytes: 81920 * mib, MemoryBandwidth: 2039 * giga, BF16FLOPS: 312 * tera,
			NVLinkBandwidth: 300 * giga, SMCount: 108, TDPWatts: 400, BaseClockMHz: 1275, BoostClockMHz: 1410},
		{Name: "B200", HBMBytes: 183359 * mib, MemoryBandwidth: 8000 * giga, BF16FLOPS: 2250 * tera,
			FP8FLOPS: 4500 * tera, FP4FLOPS: 9000 * tera, NVLinkBandwidth: 900 * giga, SMCount: 148,
			TDPWatts: 1000, BaseClockMHz: 1665, BoostClockMHz: 1965},
	}
	out := make(map[string]GPU, len(gs))
	for _, g := range gs {
		out[strings.ToLower(g.Name)] = g
	}
	return out
}

var gpuAliases = map[string]string{
	"h100": "h100-sxm", "h100-sxm5": "h100-sxm", "h100-80gb": "h100-sxm",
	"h200": "h200-sxm", "a100": "a100-sxm-80gb", "a100-80gb": "a100-sxm-80gb", "b200-sxm": "b200",
}

// LookupGPU finds a built-in GPU by name, case-insensitively, accepting short
// aliases ("h100", "h200", "a100", "b200"). An unknown name fails with an
// *UnknownNameError.
func LookupGPU(name string) (GPU, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if a, ok := gpuAliases[key]; ok {
		key = a
	}
	if g, ok := builtinGPUs()[key]; ok {
		return g, nil
	}
	return GPU{}, &UnknownNameError{Kind: "gpu", Name: name, Known: GPUNames()}
}

// GPUNames lists the built-in GPUs, sorted.
func GPUNames() []string {
	var names []string
	for _, g := range builtinGPUs() {
		names = append(names, g.Name)
	}
	sort.Strings(names)
	return names
}

// gpuYAML is the file form of a GPU, in datasheet units.
type gpuYAML struct {
	Name               string  `yaml:"name"`
	HBMGiB             float64 `yaml:"hbm_gib"`
	MemoryBandwidthGBs float64 `yaml:"memory_bandwidth_gb_s"`
	BF16TFLOPS         float64 `yaml:"bf16_tflops"`
	FP8TFLOPS          float64 `yaml:"fp8_tflops"`
	FP4TFLOPS          float64 `yaml:"fp4_tflops"`
	NVLinkGBs          float64 `yaml:"nvlink_gb_s"`
	SMCount            int     `yaml:"sm_count"`
	TDPWatts           float64 `yaml:"tdp_w"`
	BaseClockMHz       float64 `yaml:"base_clock_mhz"`
	BoostClockMHz      float64 `yaml:"boost_clock_mhz"`
}

// ReadGPUs parses a YAML list of GPU descriptions (or a document with a "gpus"
// list). Fields are in datasheet units: hbm_gib, memory_bandwidth_gb_s,
// bf16_tflops, fp8_tflops, fp4_tflops (dense), nvlink_gb_s (one direction),
// sm_count, tdp_w, base_clock_mhz, boost_clock_mhz. Unknown keys are errors;
// errors name the file and line.
func ReadGPUs(r io.Reader, name string) ([]GPU, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(r)
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read gpus %s: empty document", name)
		}
		return nil, fmt.Errorf("read gpus %s: %w", name, err)
	}
	list := &root
	if list.Kind == yaml.DocumentNode && len(list.Content) == 1 {
		list = list.Content[0]
	}
	if list.Kind == yaml.MappingNode {
		var found *yaml.Node
		for i := 0; i+1 < len(list.Content); i += 2 {
			if k := list.Content[i]; k.Value == "gpus" {
				found = list.Content[i+1]
			} else {
				return nil, fmt.Errorf("read gpus %s:%d: unknown key %q (want \"gpus\")", name, k.Line, k.Value)
			}
		}
		if found == nil {
			return nil, fmt.Errorf("read gpus %s: no \"gpus\" list", name)
		}
		list = found
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("read gpus %s:%d: want a list of GPUs", name, list.Line)
	}
	out := make([]GPU, 0, len(list.Content))
	seen := map[string]int{}
	for _, item := range list.Content {
		var y gpuYAML
		if err := decodeStrict(item, &y); err != nil {
			return nil, fmt.Errorf("read gpus %s:%d: %w", name, item.Line, err)
		}
		g := GPU{Name: y.Name, HBMBytes: y.HBMGiB * gib, MemoryBandwidth: y.MemoryBandwidthGBs * giga,
			BF16FLOPS: y.BF16TFLOPS * tera, FP8FLOPS: y.FP8TFLOPS * tera, FP4FLOPS: y.FP4TFLOPS * tera,
			NVLinkBandwidth: y.NVLinkGBs * giga, SMCount: y.SMCount, TDPWatts: y.TDPWatts,
			BaseClockMHz: y.BaseClockMHz, BoostClockMHz: y.BoostClockMHz}
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("read gpus %s:%d: %w", name, item.Line, err)
		}
		if l, dup := seen[strings.ToLower(g.Name)]; dup {
			return nil, fmt.Errorf("read gpus %s:%d: gpu %q already defined at line %d", name, item.Line, g.Name, l)
		}
		seen[strings.ToLower(g.Name)] = item.Line
		out = append(out, g)
	}
	return out, nil
}

// decodeStrict decodes a mapping node rejecting unknown keys, naming the line.
func decodeStrict(n *yaml.Node, v *gpuYAML) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("want a mapping of GPU fields")
	}
	known := map[string]bool{"name": true, "hbm_gib": true, "memory_bandwidth_gb_s": true, "bf16_tflops": true,
		"fp8_tflops": true, "fp4_tflops": true, "nvlink_gb_s": true, "sm_count": true, "tdp_w": true,
		"base_clock_mhz": true, "boost_clock_mhz": true}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !known[k.Value] {
			return fmt.Errorf("line %d: unknown field %q", k.Line, k.Value)
		}
	}
	if err := n.Decode(v); err != nil {
		return err
	}
	return nil
}
