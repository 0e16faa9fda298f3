package sim

import (
	"strings"
	"testing"
)

func TestParamsFromMap(t *testing.T) {
	p, err := ParamsFromMap(map[string]any{
		"max-num-batched-tokens":       2048,
		"max_num_seqs":                 int64(128),
		"--gpu-memory-utilization":     "0.85",
		"no-enable-prefix-caching":     true,
		"enable-chunked-prefill":       "true",
		"long-prefill-token-threshold": float64(1024),
		"block-size":                   uint64(32),
		"async-scheduling":             true,
		"kv-cache-dtype":               "fp8",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := EngineParams{MaxNumBatchedTokens: 2048, MaxNumSeqs: 128, GPUMemoryUtilization: 0.85, EnablePrefixCaching: false,
		EnableChunkedPrefill: true, LongPrefillTokenThreshold: 1024, BlockSize: 32, AsyncScheduling: true, KVCacheDtype: "fp8"}
	if p != want {
		t.Errorf("got %+v\nwant %+v", p, want)
	}
	if d, err := ParamsFromMap(nil); err != nil || d != DefaultEngineParams() {
		t.Errorf("empty map: %+v %v", d, err)
	}
}

func TestParamsFromMapErrors(t *testing.T) {
	for _, tc := range []struct {
		m   map[string]any
		err string
	}{
		{map[string]any{"tensor-parallel-size": 2}, `engine param "tensor-parallel-size": not a flag the simulator models`},
		{map[string]any{"max-num-seqs": 1.5}, `engine param "max-num-seqs": want an integer, got 1.5`},
		{map[string]any{"max-num-seqs": "many"}, `want an integer, got "many"`},
		{map[string]any{"max-num-seqs": 0}, "max-num-seqs must be at least 1"},
		{map[string]any{"gpu-memory-utilization": 1.2}, "gpu-memory-utilization must be in (0, 1]"},
		{map[string]any{"enable-prefix-caching": "yes"}, "want true or false"},
		{map[string]any{"enable-prefix-caching": 1}, "want a boolean"},
		{map[string]any{"no-max-num-seqs": true}, "not a flag the simulator models"},
		{map[string]any{"block-size": 0}, "block-size must be in [1, 1024]"},
		{map[string]any{"kv-cache-dtype": 8}, "want a string"},
	} {
		_, err := ParamsFromMap(tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.m, err, tc.err)
		}
	}
}

func FuzzParamsFromMap(f *testing.F) {
	f.Add("max-num-batched-tokens", "2048")
	f.Add("no-enable-prefix-caching", "true")
	f.Add("gpu-memory-utilization", "0.9")
	f.Fuzz(func(t *testing.T, key, value string) {
		p, err := ParamsFromMap(map[string]any{key: value})
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("%q=%q accepted but invalid: %v", key, value, verr)
			}
		}
	})
}
