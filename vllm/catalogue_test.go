package vllm

import "testing"

// TestCatalogue: the flags spoc passes and searches are in vLLM's
// catalogue, aliases and --no- forms of BooleanOptionalAction switches
// resolve, a store_true switch has no --no- form, and another engine's
// flag is not vLLM's.
func TestCatalogue(t *testing.T) {
	for _, name := range append([]string{FlagModel, FlagServedModelName, FlagTensorParallelSize, FlagDataParallelSize,
		FlagMaxModelLen, FlagEnablePromptTokensDetails, FlagHost, "port"}, keys(Defaults())...) {
		if _, ok := Catalogue.Lookup(name); !ok {
			t.Errorf("%s not in the vLLM catalogue", name)
		}
	}
	for name, want := range map[string]string{"tp": FlagTensorParallelSize, "--no-enable-prefix-caching": "enable-prefix-caching", "max_num_seqs": "max-num-seqs", "O": "compilation-config"} {
		if f, ok := Catalogue.Lookup(name); !ok || f.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, f.Name, ok, want)
		}
	}
	for _, name := range []string{"no-disable-log-stats", "max-running-requests", "mem-fraction-static", "max-num-seq"} {
		if _, ok := Catalogue.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a vLLM flag", name)
		}
	}
	// a store_true switch that is off is left out, not --no-
	args, err := Flags(map[string]any{"disable-log-stats": false, "enforce-eager": false})
	if err != nil || len(args) != 1 || args[0] != "--no-enforce-eager" {
		t.Errorf("Flags = %q, %v", args, err)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
