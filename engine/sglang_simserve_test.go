package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/vllm"
)

// sglangSimServe is the process launcher of flavor sglang on spoc sim
// serve --sglang-faithful, the SGLang stand-in: the base flags are the
// ones config's flavor sglang passes.
func sglangSimServe(t *testing.T) *Process {
	t.Helper()
	p, err := NewProcess(ProcessOptions{
		Command:       []string{spocBinary(t), "sim", "serve", "--sglang-faithful", "--model-path", "{{.Model}}", "--gpu", "H200-SXM", "--port", "{{.Port}}"},
		Model:         "gpt-oss-20b",
		BaseParams:    Params{"tp-size": 1, "context-length": 32768, "enable-metrics": true, "enable-cache-report": true},
		Flavor:        SGLang(),
		HealthTimeout: time.Minute,
		StopTimeout:   10 * time.Second,
		PollInterval:  50 * time.Millisecond,
		Dir:           t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// peakRunning sends n concurrent chat requests and returns the highest
// sglang:num_running_reqs the server's /metrics showed meanwhile.
func peakRunning(t *testing.T, ep Endpoint, n int) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":%q,"max_tokens":300,"messages":[{"role":"user","content":"request %d: write a long story"}]}`, ep.Model, i)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.BaseURL+vllm.PathChatCompletions, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	peak := 0.0
	for {
		if v, ok := gauge(t, ep.MetricsURLs[0], sglang.MetricNumRunningReqs); ok && v > peak {
			peak = v
		}
		select {
		case <-done:
			return peak
		case <-ctx.Done():
			t.Fatal("requests did not finish")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// gauge reads one gauge (summed over its series) from a metrics page.
func gauge(t *testing.T, url, name string) (float64, bool) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// TestSGLangStandInHonoursMaxRunningRequests is issue 35's "the search is
// not blind" check on the SGLang stand-in launched as a process: with
// --max-running-requests 8 the server runs at most 8 requests at once
// (sglang:num_running_reqs), with 64 it runs more; the metrics carry
// SGLang's names, the cache is flushed on /flush_cache, and the command
// line is SGLang's.
func TestSGLangStandInHonoursMaxRunningRequests(t *testing.T) {
	p := sglangSimServe(t)
	peaks := map[int]float64{}
	for _, limit := range []int{8, 64} {
		srv, err := p.Start(context.Background(), Params{"max-running-requests": limit})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		ep := srv.Endpoint()
		peaks[limit] = peakRunning(t, ep, 24)
		// idle again: the flush is accepted
		if err := srv.ResetCache(context.Background()); err != nil {
			t.Errorf("ResetCache (POST %s): %v", sglang.PathFlushCache, err)
		}
		page, _ := http.Get(ep.MetricsURLs[0])
		var b bytes.Buffer
		b.ReadFrom(page.Body)
		page.Body.Close()
		if strings.Contains(b.String(), "vllm:") || !strings.Contains(b.String(), sglang.MetricTokenUsage) {
			t.Errorf("/metrics is not SGLang's:\n%.400s", b.String())
		}
		log, _ := os.ReadFile(ep.Log)
		if first, _, _ := strings.Cut(string(log), "\n"); !strings.Contains(first, fmt.Sprintf("--enable-metrics --max-running-requests %d --tp-size 1", limit)) {
			t.Errorf("command line: %s", first)
		}
		stop(t, srv)
	}
	if peaks[8] != 8 {
		t.Errorf("--max-running-requests 8: peak sglang:num_running_reqs %v, want 8", peaks[8])
	}
	if peaks[64] <= 8 {
		t.Errorf("--max-running-requests 64: peak %v, want above 8 (24 requests at once)", peaks[64])
	}
	t.Logf("peak running requests: %v", peaks)
}
