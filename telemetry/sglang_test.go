package telemetry

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/sglang"
)

// TestSGLangMetricsAreRead: an SGLang server's exposition is kept by the
// parser (it keeps only catalogue names) and stored under the names the
// signals read, so telemetry reads an SGLang run like a vLLM one.
func TestSGLangMetricsAreRead(t *testing.T) {
	exposition := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 8
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 3
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.4
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 1000
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{model_name="m",le="0.1"} 2
sglang:time_to_first_token_seconds_bucket{model_name="m",le="+Inf"} 5
sglang:time_to_first_token_seconds_sum{model_name="m"} 1.5
sglang:time_to_first_token_seconds_count{model_name="m"} 5
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.5
`
	samples, err := Parse(strings.NewReader(exposition), TextFormat)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]float64{}
	for _, s := range samples {
		if name, ok := CanonicalSeriesName(s.Name); ok {
			stored[name] += s.Value
		}
	}
	for name, want := range map[string]float64{
		VLLMRunning: 8, VLLMWaiting: 3, VLLMKVCacheUsage: 0.4, VLLMPromptTokens: 1000,
		VLLMTTFT + SuffixCount: 5, VLLMTTFT + SuffixBucket: 7,
	} {
		if stored[name] != want {
			t.Errorf("%s = %v, want %v (stored %v)", name, stored[name], want, stored)
		}
	}
	// a gauge of SGLang's own with no vLLM counterpart is not mistaken for one
	if _, ok := CanonicalSeriesName(sglang.MetricCacheHitRate); ok {
		t.Errorf("%s stored under a vLLM name", sglang.MetricCacheHitRate)
	}
	// Prometheus queries still ask for vLLM's names only
	if q := DefaultQueries()[VLLMRunning]; strings.Contains(q, "sglang") {
		t.Errorf("default query %s", q)
	}
}
