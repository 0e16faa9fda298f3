package capacity

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLabels(t *testing.T) {
	got := parseLabels(`block_size="16", cache_dtype="auto",enable_prefix_caching="True",note="a \"q\", b"`)
	want := []string{"block_size=16", "cache_dtype=auto", "enable_prefix_caching=True", `note=a "q", b`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseLabels = %q, want %q", got, want)
	}
	if got := parseLabels(`a="1",b=2`); !reflect.DeepEqual(got, []string{"a=1"}) {
		t.Errorf("a malformed pair: %q, want the pairs before it", got)
	}
}

func FuzzParseLabels(f *testing.F) {
	f.Add(`block_size="16",gpu_memory_utilization="0.9"`)
	f.Add(`a="\`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, kv := range parseLabels(s) {
			if !strings.Contains(kv, "=") {
				t.Fatalf("pair %q without '='", kv)
			}
		}
	})
}
