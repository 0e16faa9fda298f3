package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePrometheus answers query_range from a table of expression → series,
// each series a label set and one value per step.
type fakePrometheus struct {
	mu      sync.Mutex
	answers map[string][]fakeSeries
	steps   []string
	queries []string
}

type fakeSeries struct {
	labels map[string]string
	values []float64
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query_range" {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	q := r.Form.Get("query")
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.steps = append(f.steps, r.Form.Get("step"))
	answer, ok := f.answers[q]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if q == "bad(" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error: unexpected end of input"}`)
		return
	}
	type series struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	var result []series
	if ok {
		for _, s := range answer {
			var vals [][2]any
			for i, v := range s.values {
				vals = append(vals, [2]any{float64(t0.Unix() + int64(i)), fmt.Sprint(v)})
			}
			result = append(result, series{Metric: s.labels, Values: vals})
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
}

func TestQueryRangeDerivesSignals(t *testing.T) {
	lab := func(name string, extra ...string) map[string]string {
		l := map[string]string{"__name__": name, "job": "vllm", "instance": "h:8000", "engine": "0"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	fp := &fakePrometheus{answers: map[string][]fakeSeries{
		VLLMRunning: {{lab(VLLMRunning), []float64{2, 4, 6}}},
		// Both names present: the old one must be ignored.
		`{__name__=~"vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc"}`: {
			{lab("vllm:kv_cache_usage_perc"), []float64{0.1, 0.2, 0.3}},
			{lab("vllm:gpu_cache_usage_perc"), []float64{0.9, 0.9, 0.9}},
		},
		// Old names only: taken as they are.
		`{__name__=~"vllm:prefix_cache_hits_total|vllm:gpu_prefix_cache_hits_total"}`: {
			{lab("vllm:gpu_prefix_cache_hits_total"), []float64{0, 30, 60}},
		},
		`{__name__=~"vllm:prefix_cache_queries_total|vllm:gpu_prefix_cache_queries_total"}`: {
			{lab("vllm:gpu_prefix_cache_queries_total"), []float64{0, 40, 80}},
		},
		// An edited query that aggregated __name__ away.
		"sum(vllm:num_requests_waiting)": {{map[string]string{}, []float64{1, 1, 4}}},
		`sum by (le) (vllm:time_to_first_token_seconds_bucket)`: {
			{map[string]string{"le": "0.1"}, []float64{0, 5, 10}},
			{map[string]string{"le": "+Inf"}, []float64{0, 10, 20}},
		},
	}}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	st, err := QueryRange(context.Background(), srv.URL, t0, t0.Add(2*time.Second), QueryOptions{Queries: Queries{
		VLLMWaiting: "sum(vllm:num_requests_waiting)",
		VLLMTTFT:    "sum by (le) (vllm:time_to_first_token_seconds_bucket)",
		DCGMFBFree:  "", // left out
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := st.Window(t0, t0.Add(2*time.Second), DeriveOptions{})
	e := s.Engine
	near(t, "running mean", e.Running.Mean, 4, 1e-12)
	near(t, "waiting max", e.Waiting.Max, 4, 0)
	near(t, "KV max (old name ignored)", e.KVCacheUsage.Max, 0.3, 1e-12)
	near(t, "hit rate", e.PrefixCacheHitRate, 0.75, 1e-12)
	near(t, "TTFT count from +Inf bucket", e.TTFT.Count, 20, 0)
	near(t, "TTFT p50", e.TTFT.P50, 0.1, 1e-12)
	for _, sr := range st.Series() {
		if sr.Name == VLLMRunning && sr.Target != "vllm" {
			t.Errorf("target = %q, want the job label", sr.Target)
		}
		if _, ok := sr.Labels["__name__"]; ok {
			t.Errorf("__name__ kept as a label in %s", sr.Name)
		}
	}
	if n := len(fp.queries); n != len(catalog)-1 {
		t.Errorf("%d queries sent, want one per catalog metric but the one left out (%d)", n, len(catalog)-1)
	}
}

func TestQueryRangeErrors(t *testing.T) {
	fp := &fakePrometheus{}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	ctx := context.Background()
	_, err := QueryRange(ctx, srv.URL, t0, t0.Add(time.Minute), QueryOptions{Queries: Queries{VLLMRunning: "bad("}})
	if err == nil || !strings.Contains(err.Error(), VLLMRunning) || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("bad PromQL: err = %v, want it to name the metric and Prometheus's message", err)
	}
	_, err = QueryRange(ctx, srv.URL, t0, t0.Add(time.Minute), QueryOptions{Queries: Queries{"vllm:gpu_cache_usage_perc": "x"}})
	if err == nil || !strings.Contains(err.Error(), "not a catalog metric") {
		t.Errorf("alias key: err = %v", err)
	}
	_, err = QueryRange(ctx, srv.URL, t0, t0, QueryOptions{})
	if err == nil || !strings.Contains(err.Error(), "not after start") {
		t.Errorf("empty window: err = %v", err)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	_, err = QueryRange(ctx, deadURL, t0, t0.Add(time.Minute), QueryOptions{})
	if err == nil || !strings.Contains(err.Error(), deadURL) {
		t.Errorf("dead server: err = %v, want it to name the server", err)
	}
}

func TestQueryRangeWidensStep(t *testing.T) {
	fp := &fakePrometheus{}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	// 10 hours at 1 s would be 36000 points: the step must widen to 4 s.
	if _, err := QueryRange(context.Background(), srv.URL, t0, t0.Add(10*time.Hour), QueryOptions{Step: time.Second}); err != nil {
		t.Fatal(err)
	}
	if fp.steps[0] != "4" {
		t.Errorf("step = %q, want 4", fp.steps[0])
	}
}

func TestDefaultQueriesAreValid(t *testing.T) {
	q := DefaultQueries()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	sel := SelectorQueries(`job="a",namespace=~"llm.*"`)
	for _, tc := range []struct{ got, want string }{
		{sel[VLLMRunning], `vllm:num_requests_running{job="a",namespace=~"llm.*"}`},
		{sel[VLLMTTFT], `{__name__=~"(vllm:time_to_first_token_seconds)_(bucket|sum|count)",job="a",namespace=~"llm.*"}`},
		{sel[VLLMKVCacheUsage], `{__name__=~"vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc",job="a",namespace=~"llm.*"}`},
	} {
		if tc.got != tc.want {
			t.Errorf("selector query = %s, want %s", tc.got, tc.want)
		}
	}
	for _, tc := range []struct{ key, want string }{
		{VLLMRunning, "vllm:num_requests_running"},
		{VLLMITL, `{__name__=~"(vllm:inter_token_latency_seconds|vllm:time_per_output_token_seconds)_(bucket|sum|count)"}`},
		{DCGMClockReasons, `{__name__=~"DCGM_FI_DEV_CLOCKS_EVENT_REASONS|DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}`},
	} {
		if q[tc.key] != tc.want {
			t.Errorf("query for %s = %s, want %s", tc.key, q[tc.key], tc.want)
		}
	}
}
