package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// acmeExposition is a server that names its metrics its own way, beside a
// vllm: gauge that means something else on it and a DCGM field.
const acmeExposition = `# TYPE acme_active gauge
acme_active 3
# TYPE acme_queued gauge
acme_queued 2
# TYPE acme_kv_fraction gauge
acme_kv_fraction 0.25
# TYPE acme_prompt_tokens_total counter
acme_prompt_tokens_total 1200
# TYPE acme_ttft_seconds histogram
acme_ttft_seconds_bucket{le="0.1"} 4
acme_ttft_seconds_bucket{le="+Inf"} 5
acme_ttft_seconds_sum 0.6
acme_ttft_seconds_count 5
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running 99
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.4
`

var acmeMetrics = map[string]string{
	RoleRunning: "acme_active", RoleWaiting: "acme_queued", RoleKVCacheUsage: "acme_kv_fraction",
	RolePromptTokens: "acme_prompt_tokens_total", RoleTTFT: "acme_ttft_seconds",
}

func TestParseServerReadsTheMappedNamesOnly(t *testing.T) {
	samples, err := ParseServer(strings.NewReader(acmeExposition), TextFormat, acmeMetrics)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range samples {
		if s.Labels["le"] != "" {
			got[s.Name+"{le="+s.Labels["le"]+"}"] = s.Value
			continue
		}
		got[s.Name] = s.Value
	}
	want := map[string]float64{
		VLLMRunning: 3, VLLMWaiting: 2, VLLMKVCacheUsage: 0.25, VLLMPromptTokens: 1200,
		VLLMTTFT + "_bucket{le=0.1}": 4, VLLMTTFT + "_bucket{le=+Inf}": 5, VLLMTTFT + "_sum": 0.6, VLLMTTFT + "_count": 5,
		DCGMSMActive: 0.4,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (got %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		// the server's vllm:num_requests_running (99) is not read: on a
		// server spoc knows nothing about it is not vLLM's gauge
		t.Errorf("samples %v, want exactly %v", got, want)
	}
	// the catalog's parse reads none of the server's names
	plain, err := Parse(strings.NewReader(acmeExposition), TextFormat)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plain {
		if s.Name == VLLMWaiting || s.Name == VLLMKVCacheUsage {
			t.Errorf("the catalog's names read a server's own name: %+v", s)
		}
	}
}

func TestCheckServerMetrics(t *testing.T) {
	for _, tc := range []struct {
		metrics map[string]string
		want    string
	}{
		{map[string]string{"runing": "acme_active"}, `metric role "runing": not an engine metric role`},
		{map[string]string{RoleRunning: "acme active"}, `"acme active" is not a Prometheus metric name`},
		{map[string]string{RoleRunning: "acme_n", RoleWaiting: "acme_n"}, `both mapped to "acme_n"`},
	} {
		err := CheckServerMetrics(tc.metrics)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckServerMetrics(%v) = %v, want %q", tc.metrics, err, tc.want)
		}
	}
	if err := CheckServerMetrics(acmeMetrics); err != nil {
		t.Error(err)
	}
	if len(Roles()) != 13 || Roles()[0] != RoleE2E {
		t.Errorf("Roles() = %v", Roles())
	}
}

// A collector reads a mapped target into the same signals a vLLM server's
// metrics give, and a target whose names are absent is a gap that says so.
func TestCollectorReadsAServersOwnNames(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(acmeExposition))
	}))
	defer ts.Close()
	now := time.Unix(1000, 0)
	c, err := NewCollector([]Target{
		{Name: "engine0", URL: ts.URL, Metrics: acmeMetrics},
		{Name: "wrong", URL: ts.URL, Metrics: map[string]string{RoleRunning: "acme_missing"}},
	}, time.Second, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c.ScrapeOnce(context.Background())
		now = now.Add(time.Second)
	}
	sig := c.Window(time.Unix(1000, 0), now)
	if e := sig.Engine; e.Running.Samples == 0 || e.Running.Mean != 3 || e.KVCacheUsage.Mean != 0.25 {
		t.Errorf("engine signals from the server's own names: running %+v, kv %+v", e.Running, e.KVCacheUsage)
	}
	if len(sig.Gaps) == 0 || !strings.Contains(sig.Gaps[0].Error, "acme_missing") {
		t.Errorf("gaps %+v: want the target whose mapped name is absent, named", sig.Gaps)
	}
	round := c.ScrapeOnce(context.Background())
	if !strings.Contains(round[1].Error, ErrNoServerMetrics.Error()) {
		t.Errorf("scrape error %q", round[1].Error)
	}
	if _, err := NewCollector([]Target{{Name: "x", URL: ts.URL, Metrics: map[string]string{"nope": "a"}}}, time.Second, Options{}); err == nil {
		t.Error("a target with an unknown role was accepted")
	}
}
