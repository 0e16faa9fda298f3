package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/sim"
)

// An SGLang command line as spoc's launcher renders it for flavor sglang:
// the mapped flags reach the simulated engine in its vLLM-like terms, the
// unmodelled ones are named, and SGLang's flags need the mode.
func TestCommandLineReadsAnSGLangCommandLine(t *testing.T) {
	o, err := parse(t, "--sglang-faithful", "--model-path", "openai/gpt-oss-20b", "--port", "0", "--tp-size", "2", "--dp-size", "2",
		"--max-running-requests", "8", "--chunked-prefill-size", "4096", "--mem-fraction-static", "0.85", "--disable-radix-cache",
		"--context-length", "32768", "--schedule-policy", "lpm", "--max-prefill-tokens", "16384", "--enable-metrics", "--enable-cache-report")
	if err != nil {
		t.Fatal(err)
	}
	if !o.SGLang || !o.EnableMetrics || !o.EnablePromptTokensDetails || o.Model != "openai/gpt-oss-20b" {
		t.Errorf("options %+v", o)
	}
	if strings.Join(o.IgnoredSGLang, " ") != "max-prefill-tokens schedule-policy" {
		t.Errorf("ignored %q, want the flags the simulator does not model", o.IgnoredSGLang)
	}
	spec, err := o.deploymentSpec(sim.ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	if spec.TensorParallelSize != 2 || spec.GPUs != 4 || spec.MaxModelLen != 32768 {
		t.Errorf("TP %d, GPUs %d, context %d; want 2, 4 (dp 2 × tp 2), 32768", spec.TensorParallelSize, spec.GPUs, spec.MaxModelLen)
	}
	for k, want := range map[string]any{"max-num-seqs": 8, "max-num-batched-tokens": 4096, "gpu-memory-utilization": 0.85, "enable-prefix-caching": false} {
		if spec.Params[k] != want {
			t.Errorf("engine parameter %s = %v, want %v (params %v)", k, spec.Params[k], want, spec.Params)
		}
	}
	c := o.Server(sim.Deployment{}, Config{})
	if !c.SGLangFaithful || !c.EnableMetrics || c.VLLMFaithful {
		t.Errorf("server config %+v", c)
	}
	if o, err = parse(t, "--sglang-faithful", "--chunked-prefill-size", "-1"); err != nil {
		t.Fatal(err)
	}
	if spec, _ := o.deploymentSpec(sim.ReferenceDeploymentSpec()); spec.Params["enable-chunked-prefill"] != false {
		t.Errorf("--chunked-prefill-size -1: params %v, want chunked prefill off", spec.Params)
	}
	for _, tc := range []struct {
		argv []string
		err  string
	}{
		{[]string{"--max-running-requests", "8"}, "needs --sglang-faithful"},
		{[]string{"--sglang-faithful", "--schedule-policy", "fifo"}, "not one of"},
		{[]string{"--sglang-faithful", "--max-running-requests", "many"}, "want an integer"},
		{[]string{"--sglang-faithful", "--vllm-faithful"}, "one engine at a time"},
	} {
		if _, err := parse(t, tc.argv...); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.argv, err, tc.err)
		}
	}
}

// The SGLang-faithful server: /metrics only with EnableMetrics and with
// SGLang's names, /flush_cache refused (400) while a request runs and
// accepted once idle, no /reset_prefix_cache.
func TestSGLangFaithfulServer(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.SGLangFaithful = true })
	if resp, err := http.Get(ts.URL + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics without --enable-metrics: %v %v", resp.StatusCode, err)
	}
	_, ts = newTestServer(t, func(c *Config) { c.SGLangFaithful, c.EnableMetrics, c.TimeScale = true, true, 1 })
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:time_to_first_token_seconds_bucket", "sglang:cached_tokens_total"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(page), "vllm:") {
		t.Errorf("/metrics has vLLM names:\n%.300s", page)
	}
	if resp, _ := http.Post(ts.URL+"/reset_prefix_cache", "", nil); resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Error("/reset_prefix_cache served in the SGLang-faithful mode")
	}
	// a request in flight: the flush is refused
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-oss-120b","max_tokens":2000,"messages":[{"role":"user","content":"hi"}]}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	refused := false
	for i := 0; i < 100 && !refused; i++ {
		time.Sleep(20 * time.Millisecond)
		if resp, err := http.Post(ts.URL+"/flush_cache", "", nil); err == nil {
			resp.Body.Close()
			refused = resp.StatusCode == http.StatusBadRequest
		}
	}
	if !refused {
		t.Error("/flush_cache accepted while a request ran")
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(ts.URL + "/flush_cache")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/flush_cache still refused after the request ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
