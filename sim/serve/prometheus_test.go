package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/promtest"
)

// TestPrometheusScrapesServer starts a real Prometheus (Debian package
// prometheus) that scrapes the simulator's /metrics and /dcgm/metrics, and
// queries the series back through its HTTP API.
func TestPrometheusScrapesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	_, ts := newTestServer(t, nil)
	base := promtest.Start(t, map[string]string{"vllm": ts.URL + "/metrics", "dcgm": ts.URL + "/dcgm/metrics"}, time.Second)

	// Some traffic so counters move.
	streamChat(t, ts.URL, `{"messages":[{"role":"user","content":"hello"}],"max_tokens":8,"ignore_eos":true,"stream":true}`)

	query := func(q string) (float64, bool) {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) == 0 {
			return 0, false
		}
		var v float64
		s, _ := r.Data.Result[0].Value[1].(string)
		if _, err := fmt.Sscan(s, &v); err != nil {
			return 0, false
		}
		return v, true
	}
	checks := map[string]func(float64) bool{
		`vllm:generation_tokens_total{model_name="gpt-oss-120b",engine="0"}`: func(v float64) bool { return v == 8 },
		`sum(vllm:time_to_first_token_seconds_count)`:                        func(v float64) bool { return v == 1 },
		`count(DCGM_FI_PROF_SM_ACTIVE{modelName="NVIDIA H100 80GB HBM3"})`:   func(v float64) bool { return v == 4 },
		`vllm:kv_cache_usage_perc`:                                           func(v float64) bool { return v >= 0 && v <= 1 },
	}
	deadline := time.Now().Add(30 * time.Second)
	for q, ok := range checks {
		for {
			if v, found := query(q); found && ok(v) {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("query %s: got %v (found %v) after 30s", q, v, found)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
