package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/sim"
)

var fmtSscan = fmt.Sscan

// referenceDeployment is the default configuration's deployment.
func referenceDeployment(t testing.TB) sim.Deployment {
	t.Helper()
	d, err := sim.NewDeployment(sim.ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newTestServer(t *testing.T, mod func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	cfg := Config{Deployment: referenceDeployment(t), TimeScale: 200, Hostname: "simhost"}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

type sseResult struct {
	chunks      int
	text        string
	roles       int
	finish      string
	prompt      int
	completion  int
	cached      int
	usage, done bool
}

func streamChat(t *testing.T, url, body string) sseResult {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var res sseResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			res.done = true
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens        int `json:"prompt_tokens"`
				CompletionTokens    int `json:"completion_tokens"`
				TotalTokens         int `json:"total_tokens"`
				PromptTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if ch.Usage != nil {
			res.usage = true
			res.prompt, res.completion, res.cached = ch.Usage.PromptTokens, ch.Usage.CompletionTokens, ch.Usage.PromptTokensDetails.CachedTokens
			if ch.Usage.TotalTokens != res.prompt+res.completion {
				t.Errorf("total_tokens %d != %d + %d", ch.Usage.TotalTokens, res.prompt, res.completion)
			}
		}
		for _, c := range ch.Choices {
			if c.Delta.Role != "" {
				res.roles++
			}
			if c.Delta.Content != nil {
				res.chunks++
				res.text += *c.Delta.Content
			}
			if c.FinishReason != nil {
				res.finish = *c.FinishReason
			}
		}
	}
	return res
}

func TestServerStreamingChat(t *testing.T) {
	s, ts := newTestServer(t, nil)
	long := strings.Repeat("The shared monorepo root file contents go here. ", 200)
	body := `{"model":"gpt-oss-120b","messages":[{"role":"system","content":` + quote(long) + `},{"role":"user","content":"hi"}],` +
		`"max_tokens":20,"ignore_eos":true,"min_tokens":20,"stream":true,"stream_options":{"include_usage":true}}`
	a := streamChat(t, ts.URL, body)
	if a.chunks != 20 || a.completion != 20 || a.finish != "length" || !a.usage || !a.done || a.roles != 1 {
		t.Fatalf("first reply: %+v", a)
	}
	if a.prompt < 1800 {
		t.Fatalf("prompt tokens %d, want the long system prompt counted", a.prompt)
	}
	if a.cached != 0 {
		t.Errorf("first request cached %d tokens, want 0", a.cached)
	}
	b := streamChat(t, ts.URL, body)
	if want := (a.prompt - 1) / 16 * 16; b.cached != want {
		t.Errorf("identical second request cached %d tokens, want %d", b.cached, want)
	}
	// The next turn carries the reply in its history: it hits the first
	// turn's prompt and reply blocks.
	next := `{"model":"gpt-oss-120b","messages":[{"role":"system","content":` + quote(long) + `},{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":` + quote(a.text) + `},{"role":"user","content":"more"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`
	c := streamChat(t, ts.URL, next)
	if c.cached < (a.prompt+a.completion)/16*16-16 {
		t.Errorf("next turn cached %d tokens, want about the first turn's %d prompt + %d reply", c.cached, a.prompt, a.completion)
	}
	if c.completion < 1 || c.completion > 5 {
		t.Errorf("without ignore_eos: %d tokens, want 1..5", c.completion)
	}
	metrics := get(t, ts.URL+"/metrics")
	for _, want := range []string{
		`vllm:num_requests_running{engine="0",model_name="gpt-oss-120b"} 0`,
		`vllm:prompt_tokens_total{engine="0",model_name="gpt-oss-120b"}`,
		`vllm:generation_tokens_total{engine="0",model_name="gpt-oss-120b"}`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="gpt-oss-120b"}`,
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="gpt-oss-120b"} 2`,
		`vllm:time_to_first_token_seconds_bucket{engine="0",model_name="gpt-oss-120b",le="2560"} 3`,
		`vllm:inter_token_latency_seconds_bucket{engine="0",model_name="gpt-oss-120b",le="0.01"}`,
		`vllm:e2e_request_latency_seconds_bucket{engine="0",model_name="gpt-oss-120b",le="7680"} 3`,
		`vllm:iteration_tokens_total_bucket{engine="0",model_name="gpt-oss-120b",le="16384"}`,
		`vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True"`,
		`# TYPE vllm:kv_cache_usage_perc gauge`,
		`# TYPE vllm:num_preemptions_total counter`,
		`# TYPE vllm:request_queue_time_seconds histogram`,
		`# TYPE vllm:time_per_output_token_seconds histogram`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	_ = s
}

func TestServerDCGM(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) {
		c.Deployment.Throttles = []sim.Throttle{{GPU: 1, ClockFactor: 0.5}}
	})
	out := get(t, ts.URL+"/dcgm/metrics")
	for _, want := range []string{
		`DCGM_FI_PROF_SM_ACTIVE{Hostname="simhost",UUID="GPU-`,
		`DCGM_FI_DEV_SM_CLOCK{Hostname="simhost",UUID="`,
		`gpu="3",modelName="NVIDIA H100 80GB HBM3"`,
		`# TYPE DCGM_FI_DEV_GPU_TEMP gauge`,
		`DCGM_FI_PROF_DRAM_ACTIVE`, `DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`, `DCGM_FI_DEV_GPU_UTIL`,
		`DCGM_FI_DEV_POWER_USAGE`, `DCGM_FI_DEV_FB_USED`, `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/dcgm/metrics lacks %q", want)
		}
	}
	time.Sleep(10 * time.Millisecond) // > 1 simulated second at scale 200
	out = get(t, ts.URL+"/dcgm/metrics")
	if !strings.Contains(out, `DCGM_FI_DEV_SM_CLOCK{Hostname="simhost",UUID="`+gpuUUID("simhost", 1)+`",device="nvidia1",gpu="1",modelName="NVIDIA H100 80GB HBM3"} 990`) {
		t.Errorf("throttled GPU 1 should report 990 MHz:\n%s", grep(out, "SM_CLOCK"))
	}
}

func TestServerErrors(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.Deployment.MaxModelLen = 4096 })
	for _, tc := range []struct {
		name, path, body string
		code             int
	}{
		{"bad json", "/v1/chat/completions", `{`, 400},
		{"wrong model", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, 400},
		{"too long", "/v1/completions", `{"prompt":"hello","max_tokens":5000}`, 400},
		{"non-streaming", "/v1/completions", `{"prompt":"hello there","max_tokens":3,"ignore_eos":true}`, 200},
	} {
		resp, err := http.Post(ts.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: status %d, want %d: %.300s", tc.name, resp.StatusCode, tc.code, b)
		}
		if tc.code == 200 {
			var r struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.Usage.CompletionTokens != 3 || len(r.Choices) != 1 || len(strings.Fields(r.Choices[0].Text)) != 3 {
				t.Errorf("%s: %s (%v)", tc.name, b, err)
			}
		}
	}
	if m := get(t, ts.URL+"/v1/models"); !strings.Contains(m, `"id":"gpt-oss-120b"`) || !strings.Contains(m, `"max_model_len":4096`) {
		t.Errorf("/v1/models: %s", m)
	}
	resp, err := http.Post(ts.URL+"/tokenize", "application/json", strings.NewReader(`{"prompt":"hello world"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"count":2`) {
		t.Errorf("/tokenize: %s", b)
	}
}

func TestServerInjectedErrors(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.ErrorRate = 1 })
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("error rate 1: status %d, want 500", resp.StatusCode)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestServerStallDelaysFirstToken(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) {
		c.TimeScale = 1000
		c.Stalls = []Stall{{Start: 0, Duration: 100 * time.Second}}
	})
	streamChat(t, ts.URL, `{"messages":[{"role":"user","content":"hello"}],"max_tokens":2,"ignore_eos":true,"stream":true}`)
	m := get(t, ts.URL+"/metrics")
	line := grep(m, `vllm:time_to_first_token_seconds_sum{`)
	var v float64
	if _, err := fmtSscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil || v < 90 {
		t.Errorf("TTFT sum %q: want ≥ 90 simulated seconds behind a 100 s stall", line)
	}
}

func TestServerClientsGoingAway(t *testing.T) {
	_, ts := newTestServer(t, func(c *Config) { c.TimeScale = 20 })
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := `{"messages":[{"role":"user","content":"question ` + strconv.Itoa(i) + `"}],"max_tokens":400,"ignore_eos":true,"stream":true}`
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if i%2 == 0 { // read a little, then hang up
				buf := make([]byte, 512)
				_, _ = resp.Body.Read(buf)
				cancel()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := get(t, ts.URL+"/metrics")
		idle := strings.Contains(m, `vllm:num_requests_running{engine="0",model_name="gpt-oss-120b"} 0`) &&
			strings.Contains(m, `vllm:num_requests_waiting{engine="0",model_name="gpt-oss-120b"} 0`) &&
			strings.Contains(m, `vllm:kv_cache_usage_perc{engine="0",model_name="gpt-oss-120b"} 0`)
		if idle && strings.Contains(m, `vllm:request_success_total{engine="0",finished_reason="length",model_name="gpt-oss-120b"} 6`) {
			if !strings.Contains(m, `finished_reason="abort",model_name="gpt-oss-120b"} 6`) {
				t.Errorf("aborted requests not counted:\n%s", grep(m, "request_success"))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine not idle after clients left:\n%s\n%s", grep(m, "num_requests"), grep(m, "request_success"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
