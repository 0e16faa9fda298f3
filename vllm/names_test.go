package vllm

import (
	"sort"
	"testing"
)

// TestFlagName is the normalisation rule every caller shares: dashes and
// underscores, leading dashes and spaces, and the "no-" form of booleans.
func TestFlagName(t *testing.T) {
	for _, tc := range []struct {
		in, flag, negates string
		negated           bool
	}{
		{"max-num-seqs", "max-num-seqs", "max-num-seqs", false},
		{"max_num_seqs", "max-num-seqs", "max-num-seqs", false},
		{"--max-num-seqs", "max-num-seqs", "max-num-seqs", false},
		{"-max_num-seqs", "max-num-seqs", "max-num-seqs", false},
		{"  --max_num_seqs ", "max-num-seqs", "max-num-seqs", false},
		{"enable_prefix_caching", "enable-prefix-caching", "enable-prefix-caching", false},
		{"no-enable-prefix-caching", "no-enable-prefix-caching", "enable-prefix-caching", true},
		{"--no_enable_prefix_caching", "no-enable-prefix-caching", "enable-prefix-caching", true},
		{"no-", "no-", "no-", false},
		{"no", "no", "no", false},
		{"node-rank", "node-rank", "node-rank", false},
		{"gpu_memory.utilization", "gpu-memory.utilization", "gpu-memory.utilization", false},
		{"--", "", "", false},
		{"", "", "", false},
	} {
		f := FlagName(tc.in)
		if f != tc.flag {
			t.Errorf("FlagName(%q) = %q, want %q", tc.in, f, tc.flag)
		}
		base, neg := CutNegation(f)
		if base != tc.negates || neg != tc.negated {
			t.Errorf("CutNegation(%q) = %q, %v; want %q, %v", f, base, neg, tc.negates, tc.negated)
		}
	}
}

// TestFlagsRoundTripNegation checks that the negated form Flags renders is
// the one CutNegation recognises.
func TestFlagsRoundTripNegation(t *testing.T) {
	argv, err := Flags(map[string]any{"enable_prefix_caching": false})
	if err != nil {
		t.Fatal(err)
	}
	base, ok := CutNegation(FlagName(argv[0]))
	if !ok || base != "enable-prefix-caching" {
		t.Errorf("Flags rendered %q, CutNegation gives %q, %v", argv, base, ok)
	}
}

func TestServedName(t *testing.T) {
	for _, tc := range []struct{ model, served, want string }{
		{"openai/gpt-oss-120b", "", "openai/gpt-oss-120b"},
		{"openai/gpt-oss-120b", "gpt", "gpt"},
		{"", "gpt", "gpt"},
		{"", "", ""},
	} {
		if got := ServedName(tc.model, tc.served); got != tc.want {
			t.Errorf("ServedName(%q, %q) = %q, want %q", tc.model, tc.served, got, tc.want)
		}
	}
}

func TestMetricNames(t *testing.T) {
	names := MetricNames()
	if !sort.StringsAreSorted(names) {
		t.Errorf("not sorted: %q", names)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%q twice", n)
		}
		seen[n] = true
		if len(n) < 6 || n[:5] != "vllm:" {
			t.Errorf("%q lacks the vllm: namespace", n)
		}
	}
}
