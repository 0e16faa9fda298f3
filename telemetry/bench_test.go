package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fullVLLM pads the fake vLLM exposition with the histograms and process
// metrics a real vLLM server also exposes (about 600 lines in all), so the
// benchmark parses what production scrapes parse.
func fullVLLM(tick int) string {
	var b strings.Builder
	b.WriteString(newFakeExporter().vllm(tick))
	lab := `engine="0",model_name="openai/gpt-oss-120b"`
	for _, h := range []string{"request_generation_tokens", "iteration_tokens_total",
		"request_params_max_tokens", "request_params_n", "request_inference_time_seconds",
		"request_prefill_time_seconds", "request_decode_time_seconds", "e2e_request_latency_seconds",
		"request_queue_time_seconds", "request_time_per_output_token_seconds", "request_max_num_generation_tokens"} {
		fmt.Fprintf(&b, "# HELP vllm:%s help.\n# TYPE vllm:%s histogram\n", h, h)
		for i := 0; i < 30; i++ {
			fmt.Fprintf(&b, "vllm:%s_bucket{%s,le=\"%g\"} %d\n", h, lab, float64(int(1)<<i)/1000, tick*i)
		}
		fmt.Fprintf(&b, "vllm:%s_bucket{%s,le=\"+Inf\"} %d\nvllm:%s_count{%s} %d\nvllm:%s_sum{%s} %d\n", h, lab, tick*30, h, lab, tick*30, h, lab, tick*7)
	}
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "# HELP process_metric_%d help.\n# TYPE process_metric_%d gauge\nprocess_metric_%d %d\n", i, i, i, i)
	}
	return b.String()
}

// fullDCGM is an 8-GPU node with the fake's fields.
func fullDCGM(tick int) string {
	e := newFakeExporter()
	e.gpus = 8
	return e.dcgm(tick)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScrapeRound10Targets measures one scrape round over ten targets
// (five vLLM servers, five 8-GPU dcgm-exporters) served from memory by an
// in-process server: fetch, parse, normalise, store. cpu-ms/round is the
// process's CPU time per round, server side included; %core@1s is that cost
// as a share of one core when scraping every second (budget: 2 %).
func BenchmarkScrapeRound10Targets(b *testing.B) {
	vllm, dcgm := []byte(fullVLLM(100)), []byte(fullDCGM(100))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if strings.HasPrefix(r.URL.Path, "/dcgm") {
			w.Write(dcgm)
			return
		}
		w.Write(vllm)
	}))
	defer srv.Close()
	var targets []Target
	for i := 0; i < 5; i++ {
		targets = append(targets, Target{Name: fmt.Sprintf("vllm-%d", i), URL: fmt.Sprintf("%s/metrics?i=%d", srv.URL, i)})
		targets = append(targets, Target{Name: fmt.Sprintf("dcgm-%d", i), URL: fmt.Sprintf("%s/dcgm/metrics?i=%d", srv.URL, i)})
	}
	c, err := NewCollector(targets, time.Second, Options{Now: virtualClock()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c.ScrapeOnce(ctx) // open connections, create series
	b.SetBytes(int64(5*len(vllm) + 5*len(dcgm)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		for _, sc := range c.ScrapeOnce(ctx) {
			if sc.Error != "" {
				b.Fatal(sc.Error)
			}
		}
	}
	cpu := cpuTime() - cpu0
	perRound := float64(cpu) / float64(b.N) / float64(time.Millisecond)
	b.ReportMetric(perRound, "cpu-ms/round")
	b.ReportMetric(perRound/1000*100, "%core@1s")
}

// BenchmarkParseVLLM measures parsing one full vLLM exposition.
func BenchmarkParseVLLM(b *testing.B) {
	in := fullVLLM(100)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(strings.NewReader(in), TextFormat); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWindow measures deriving a window's signals from an hour of
// one-second scrapes of one vLLM server and one 8-GPU node.
func BenchmarkWindow(b *testing.B) {
	st := NewStore(StoreOptions{})
	exp := newFakeExporter()
	exp.gpus = 8
	for i := 0; i < 3600; i++ {
		v, _ := Parse(strings.NewReader(exp.vllm(i)), TextFormat)
		d, _ := Parse(strings.NewReader(exp.dcgm(i)), TextFormat)
		ts := t0.Add(time.Duration(i) * time.Second)
		st.Add("vllm", ts, v)
		st.Add("dcgm", ts, d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.Window(t0, t0.Add(time.Hour), DeriveOptions{})
	}
}

// TestFullExpositionsParse keeps the benchmark's inputs honest.
func TestFullExpositionsParse(t *testing.T) {
	in := fullVLLM(3)
	if n := strings.Count(in, "\n"); n < 500 {
		t.Errorf("full vLLM exposition has %d lines, want a realistic 500+", n)
	}
	for _, in := range []string{in, fullDCGM(3)} {
		s, err := Parse(strings.NewReader(in), TextFormat)
		if err != nil || len(s) == 0 {
			t.Fatalf("Parse = %d samples, %v", len(s), err)
		}
	}
}
