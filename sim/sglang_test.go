package sim

import (
	"reflect"
	"strings"
	"testing"
)

// TestSGLangParams: SGLang's flags in the simulator's terms, the
// unmodelled ones named, a foreign flag refused.
func TestSGLangParams(t *testing.T) {
	got, ignored, err := SGLangParams(map[string]any{
		"max_running_requests": 64, "chunked-prefill-size": 4096.0, "mem-fraction-static": 0.85,
		"disable-radix-cache": true, "context-length": 32768, "schedule-policy": "lpm", "max-prefill-tokens": 16384,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max-num-seqs": 64, "max-num-batched-tokens": 4096, "gpu-memory-utilization": 0.85,
		"enable-prefix-caching": false, "max-model-len": 32768}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SGLangParams = %v, want %v", got, want)
	}
	if strings.Join(ignored, " ") != "max-prefill-tokens schedule-policy" {
		t.Errorf("ignored %q", ignored)
	}
	if p, _, _ := SGLangParams(map[string]any{"chunked-prefill-size": -1}); p["enable-chunked-prefill"] != false {
		t.Errorf("-1: %v", p)
	}
	for _, bad := range []map[string]any{{"max-num-seqs": 8}, {"schedule-policy": "fifo"}, {"max-running-requests": 0.5}} {
		if _, _, err := SGLangParams(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	spec := ReferenceDeploymentSpec()
	spec.Flavor, spec.Params = FlavorSGLang, map[string]any{"max-running-requests": 32}
	d, err := NewDeployment(spec)
	if err != nil {
		t.Fatal(err)
	}
	if d.Params.MaxNumSeqs != 32 {
		t.Errorf("deployment max-num-seqs %d, want 32", d.Params.MaxNumSeqs)
	}
	if err := d.ApplyParams(map[string]any{"disable-radix-cache": true}); err != nil || d.Params.EnablePrefixCaching {
		t.Errorf("ApplyParams: %v, prefix caching %v", err, d.Params.EnablePrefixCaching)
	}
}
