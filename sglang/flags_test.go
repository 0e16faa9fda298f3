package sglang

import (
	"reflect"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
		err    string
	}{
		{"empty", nil, []string{}, ""},
		{"int and float", map[string]any{"max_running_requests": 64, "mem-fraction-static": 0.85}, []string{"--max-running-requests", "64", "--mem-fraction-static", "0.85"}, ""},
		{"switch on", map[string]any{"disable-radix-cache": true}, []string{"--disable-radix-cache"}, ""},
		{"switch off is no flag", map[string]any{"disable-radix-cache": false, "tp-size": 2}, []string{"--tp-size", "2"}, ""},
		{"string", map[string]any{"schedule-policy": "lpm"}, []string{"--schedule-policy", "lpm"}, ""},
		{"integral float", map[string]any{"chunked-prefill-size": 8192.0}, []string{"--chunked-prefill-size", "8192"}, ""},
		{"alias and name are one flag", map[string]any{"tp-size": 2, "tensor-parallel-size": 4}, nil, "same flag --tp-size"},
		{"NaN", map[string]any{"mem-fraction-static": nan()}, nil, "finite"},
		{"slice", map[string]any{"x": []int{1}}, nil, "unsupported value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(tc.params)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Render = %q, want %q", got, tc.want)
			}
		})
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestLookupAndCheck(t *testing.T) {
	for name, want := range map[string]string{
		"tensor_parallel_size": FlagTPSize, "--dp-size": FlagDPSize, "model": FlagModelPath,
		"max-running-requests": FlagMaxRunningRequests,
	} {
		f, ok := Catalogue.Lookup(name)
		if !ok || f.Name != want {
			t.Errorf("Catalogue.Lookup(%q) = %q, %v; want %q", name, f.Name, ok, want)
		}
	}
	for _, vllmOnly := range []string{"max-num-seqs", "gpu-memory-utilization", "enable-prefix-caching", "max-model-len"} {
		if _, ok := Catalogue.Lookup(vllmOnly); ok {
			t.Errorf("%s is vLLM's, not SGLang's", vllmOnly)
		}
		if VLLMCounterparts[vllmOnly] == "" {
			t.Errorf("%s has no SGLang counterpart named", vllmOnly)
		}
	}
	sp, _ := Catalogue.Lookup(FlagSchedulePolicy)
	if err := sp.Check("lpm"); err != nil {
		t.Error(err)
	}
	if err := sp.Check("fifo"); err == nil || !strings.Contains(err.Error(), "not one of") {
		t.Errorf("Check(fifo) = %v", err)
	}
	rc, _ := Catalogue.Lookup(FlagDisableRadixCache)
	if err := rc.Check(1); err == nil {
		t.Error("a switch took 1")
	}
	mr, _ := Catalogue.Lookup(FlagMaxRunningRequests)
	if err := mr.Check(0.5); err == nil {
		t.Error("an integer flag took 0.5")
	}
	if d := Defaults(); d[FlagMaxPrefillTokens] != 16384 || d[FlagSchedulePolicy] != "fcfs" {
		t.Errorf("Defaults = %v", d)
	}
}

func TestMetricNames(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range MetricNames() {
		if !strings.HasPrefix(n, "sglang:") || seen[n] {
			t.Errorf("%q: not an sglang: name, or twice", n)
		}
		seen[n] = true
	}
}
