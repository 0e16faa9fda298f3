package tune

import (
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
)

// referenceSpec is the study a default plan file describes (config's
// DefaultSearch and DefaultSpace on the reference deployment: engine.params,
// tensor-parallel size 4, context 131072, the reference SLA), spelt out
// because tune's tests do not load a config.
func referenceSpec() Spec {
	return Spec{
		Space: []search.ParamSpec{
			{Name: "max-num-batched-tokens", Type: "int", Low: 256, High: 16384, Log: true},
			{Name: "max-num-seqs", Type: "int", Low: 16, High: 1024, Log: true},
			{Name: "gpu-memory-utilization", Type: "float", Low: 0.80, High: 0.95, Step: 0.01},
			{Name: "enable-prefix-caching", Type: "bool", Choices: []any{true, false}},
			{Name: "enable-chunked-prefill", Type: "bool", Choices: []any{true, false}},
			{Name: "long-prefill-token-threshold", Type: "categorical", Choices: []any{0, 2048, 8192}},
			{Name: "block-size", Type: "categorical", Choices: []any{16, 32, 64}},
			{Name: "async-scheduling", Type: "bool", Choices: []any{true, false}},
		},
		Objectives: []search.ObjectiveSpec{
			{Metric: "output_throughput", Direction: "maximize"},
			{Metric: "ttft_p95", Direction: "minimize"},
			{Metric: "itl_p95", Direction: "minimize"},
		},
		Sampler:       "nsga2",
		Population:    12,
		CrossoverProb: 0.9,
		Seed:          1,
		Trials:        60,
		Storage:       "sqlite:study.db",
		Study:         "default",
		BaseParams: search.Params{
			"tensor-parallel-size":   4,
			"max-model-len":          131072,
			"max-num-batched-tokens": 8192,
			"max-num-seqs":           256,
			"gpu-memory-utilization": 0.9,
			"enable-prefix-caching":  true,
			"enable-chunked-prefill": true,
			"block-size":             16,
		},
		MaxModelLen: 131072,
		SLA:         result.DefaultSLA(),
	}
}
