package tune

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// vLLM's defaults as package vllm states them are the simulator's.
func TestVLLMDefaultsAreTheSimulatorsDefaults(t *testing.T) {
	got, err := sim.ParamsFromMap(vllm.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if got != sim.DefaultEngineParams() {
		t.Errorf("vllm.Defaults gives %+v, the simulator starts from %+v", got, sim.DefaultEngineParams())
	}
}

func TestPrune(t *testing.T) {
	spec := referenceSpec()
	kept, dropped := Prune(spec.Space, spec.BaseParams, spec.MaxModelLen)
	if len(dropped) != 1 || dropped[0].Name != "enable-chunked-prefill" || dropped[0].Value != true {
		t.Fatalf("dropped %+v, want enable-chunked-prefill fixed on", dropped)
	}
	if !strings.Contains(dropped[0].Reason, "131072") || !strings.Contains(dropped[0].Reason, "16384") {
		t.Errorf("reason does not give the numbers: %s", dropped[0].Reason)
	}
	if len(kept) != len(spec.Space)-1 {
		t.Errorf("kept %d of %d", len(kept), len(spec.Space))
	}

	// A budget range reaching the context limit keeps chunked prefill.
	wide := append([]search.ParamSpec(nil), spec.Space...)
	wide[0].High = 131072
	if _, d := Prune(wide, spec.BaseParams, spec.MaxModelLen); len(d) != 0 {
		t.Errorf("dropped %+v with a budget up to the context limit", d)
	}

	// Thresholds that are all at or above the largest budget mean off.
	narrow := []search.ParamSpec{
		{Name: "max-num-batched-tokens", Type: "categorical", Choices: []any{1024, 2048}},
		{Name: "long-prefill-token-threshold", Type: "categorical", Choices: []any{0, 2048, 8192}},
		{Name: "block-size", Type: "categorical", Choices: []any{32}},
	}
	kept, dropped = Prune(narrow, nil, 131072)
	if len(kept) != 1 || len(dropped) != 2 || dropped[0].Value != 0 || dropped[1].Value != 32 {
		t.Errorf("kept %+v dropped %+v; want the threshold (off) and the one-value block size dropped", kept, dropped)
	}
}

func TestSeeds(t *testing.T) {
	spec := referenceSpec()
	plan, err := NewPlan(spec)
	if err != nil {
		t.Fatal(err)
	}
	// engine.params equal vLLM's defaults on every searched flag: one seed.
	if len(plan.Seeds) != 1 || plan.Seeds[0].Name != "engine.params" {
		t.Fatalf("seeds %+v", plan.Seeds)
	}
	p := plan.Seeds[0].Params
	if p.Int("max-num-batched-tokens") != 8192 || p.Int("max-num-seqs") != 256 || p["async-scheduling"] != false || p.Int("long-prefill-token-threshold") != 0 {
		t.Errorf("seed 0 %v", p)
	}
	if len(plan.SeedNotes) != 1 || !strings.Contains(plan.SeedNotes[0], "vLLM defaults") {
		t.Errorf("notes %q", plan.SeedNotes)
	}

	// Configured flags that differ give two seeds; one outside the space
	// is left out with the reason.
	spec.BaseParams = search.Params{"max_num_seqs": 64, "max-num-batched-tokens": 2048}
	plan, err = NewPlan(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Seeds) != 2 || plan.Seeds[0].Params.Int("max-num-seqs") != 64 || plan.Seeds[1].Params.Int("max-num-seqs") != 256 {
		t.Errorf("seeds %+v", plan.Seeds)
	}
	spec.BaseParams = search.Params{"max-num-seqs": 4096}
	plan, err = NewPlan(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Seeds) != 1 || plan.Seeds[0].Name != "vLLM defaults" || !strings.Contains(strings.Join(plan.SeedNotes, ";"), "4096") {
		t.Errorf("seeds %+v notes %q", plan.Seeds, plan.SeedNotes)
	}
}

// Equivalent thresholds are one point of the reference space.
func TestSpaceCanonicalThreshold(t *testing.T) {
	plan, err := NewPlan(referenceSpec())
	if err != nil {
		t.Fatal(err)
	}
	a := search.Params{"max-num-batched-tokens": 2048, "max-num-seqs": 64, "gpu-memory-utilization": 0.9,
		"enable-prefix-caching": true, "long-prefill-token-threshold": 8192, "block-size": 16, "async-scheduling": true}
	b := a.Clone()
	b["long-prefill-token-threshold"] = 0
	c := a.Clone()
	c["max-num-batched-tokens"] = 16384
	d := c.Clone()
	d["long-prefill-token-threshold"] = 0
	if plan.Space.CanonicalKey(a) != plan.Space.CanonicalKey(b) {
		t.Error("threshold 8192 over a 2048 budget differs from off")
	}
	if plan.Space.CanonicalKey(c) == plan.Space.CanonicalKey(d) {
		t.Error("threshold 8192 under a 16384 budget equals off")
	}
}

// TestSeedsUseTheFlavorsDefaults: a study on SGLang seeds itself with
// SGLang's defaults, not vLLM's; a flag SGLang derives at start-up leaves
// the defaults seed out with the reason; a generic server that declares
// no defaults has no defaults seed, and the notes say so.
func TestSeedsUseTheFlavorsDefaults(t *testing.T) {
	space, err := Space([]search.ParamSpec{
		{Name: "schedule-policy", Type: "categorical", Choices: []any{"fcfs", "lpm"}},
		{Name: "max-prefill-tokens", Type: "categorical", Choices: []any{8192, 16384, 32768}},
	}, nil, 131072)
	if err != nil {
		t.Fatal(err)
	}
	sg := map[string]any{"schedule-policy": "fcfs", "max-prefill-tokens": 16384}
	seeds, notes := Seeds(space, search.Params{"schedule-policy": "lpm"}, sg, "SGLang defaults")
	if len(seeds) != 2 || seeds[1].Name != "SGLang defaults" || seeds[1].Params["schedule-policy"] != "fcfs" ||
		seeds[0].Params["schedule-policy"] != "lpm" || seeds[0].Params.Int("max-prefill-tokens") != 16384 {
		t.Errorf("seeds %+v notes %q", seeds, notes)
	}
	seeds, notes = Seeds(space, search.Params{"schedule-policy": "lpm"}, map[string]any{"schedule-policy": "fcfs"}, "SGLang defaults")
	if len(seeds) != 0 || len(notes) != 2 || !strings.Contains(notes[1], "no fixed value for max-prefill-tokens") {
		t.Errorf("seeds %+v notes %q", seeds, notes)
	}
	seeds, notes = Seeds(space, search.Params{"schedule-policy": "lpm", "max-prefill-tokens": 8192}, nil, "server's declared defaults")
	if len(seeds) != 1 || seeds[0].Name != "engine.params" || len(notes) != 1 || !strings.Contains(notes[0], "no defaults seed") {
		t.Errorf("seeds %+v notes %q", seeds, notes)
	}
}
