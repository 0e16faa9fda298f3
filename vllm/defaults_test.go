package vllm

import (
	"reflect"
	"testing"
)

func TestCanonicalThresholdAtOrAboveBudgetIsOff(t *testing.T) {
	base := map[string]any{"max_num_batched_tokens": 4096}
	for _, c := range []struct {
		name     string
		p        map[string]any
		wantThr  any
		sameAsIn bool
	}{
		{"below the budget stays", map[string]any{"max-num-batched-tokens": 8192, "long-prefill-token-threshold": 2048}, 2048, true},
		{"equal to the budget is off", map[string]any{"max-num-batched-tokens": 2048, "long-prefill-token-threshold": 2048}, 0, false},
		{"above the budget is off", map[string]any{"max-num-batched-tokens": 1024, "long-prefill-token-threshold": 8192}, 0, false},
		{"budget from base", map[string]any{"long-prefill-token-threshold": 8192}, 0, false},
		{"budget from base, below", map[string]any{"long_prefill_token_threshold": 2048}, 2048, true},
		{"zero stays zero", map[string]any{"max-num-batched-tokens": 1024, "long-prefill-token-threshold": 0}, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := map[string]any{}
			for k, v := range c.p {
				in[k] = v
			}
			got := Canonical(c.p, base)
			k, _ := keyOf(got, "long-prefill-token-threshold")
			if got[k] != c.wantThr {
				t.Errorf("threshold %v, want %v (%v)", got[k], c.wantThr, got)
			}
			if !reflect.DeepEqual(c.p, in) {
				t.Errorf("input modified: %v", c.p)
			}
		})
	}
	// Without a budget anywhere, vLLM's default budget decides.
	if got := Canonical(map[string]any{"long-prefill-token-threshold": 8192}, nil); got["long-prefill-token-threshold"] != 0 {
		t.Errorf("threshold 8192 with the default budget 8192: %v", got)
	}
}
