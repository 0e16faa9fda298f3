package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startPrometheus runs the real Prometheus server on a free loopback port
// with a temporary storage directory, scraping every target of jobs (job name
// → URL) every interval. It returns the server's base URL; the server is
// stopped when the test ends. Without the binary the test skips, or fails
// under CI=true.
func startPrometheus(t *testing.T, jobs map[string]string, interval time.Duration) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus is not installed: apt-get install -y prometheus")
		}
		t.Skip("prometheus is not installed (apt-get install -y prometheus)")
	}
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n", interval, interval)
	for job, raw := range jobs {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "  - job_name: %q\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n", job, u.Path, u.Host)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready after 30 s: %v\n%s", base, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPrometheusMatchesDirectScrape runs the real Prometheus against a live
// exporter while a Collector scrapes the same exporter directly, then checks
// that QueryRange (the library path of `spoc telemetry query`) derives the
// same signals, stragglers included, within the tolerance the two samplings'
// different instants allow.
func TestPrometheusMatchesDirectScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	const period = 200 * time.Millisecond
	exp := newFakeExporter()
	born := time.Now()
	exp.live = func() int { return int(time.Since(born) / period) }
	srv := exp.start(t)
	jobs := map[string]string{"vllm": srv.URL + "/metrics", "dcgm": srv.URL + "/dcgm/metrics"}
	prom := startPrometheus(t, jobs, period)
	t.Logf("prometheus ready after %s", time.Since(born).Round(time.Millisecond))

	c, err := NewCollector([]Target{{"vllm", jobs["vllm"]}, {"dcgm", jobs["dcgm"]}}, period, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()

	waitForScrapes(t, prom)
	t.Logf("both jobs scraped after %s", time.Since(born).Round(time.Millisecond))
	start := time.Now()
	startTick := exp.live()
	exp.mu.Lock()
	exp.throttleGPU, exp.throttleFrom, exp.throttleTo = 2, startTick+5, startTick+12
	exp.mu.Unlock()
	time.Sleep(20 * period)
	end := time.Now()
	time.Sleep(3 * period) // let both sides take their last scrape
	cancel()
	stopped = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	direct := c.Window(start, end)
	st, err := QueryRange(context.Background(), prom, start, end, QueryOptions{Step: period})
	if err != nil {
		t.Fatal(err)
	}
	viaProm := st.Window(start, end, DeriveOptions{})

	d, p := direct.Engine, viaProm.Engine
	t.Logf("direct:     running %.2f/%.0f KV p50 %.2f prompt %.0f TTFT p99 %.3f stragglers %v", d.Running.Mean, d.Running.Max, d.KVCacheUsage.P50, d.PromptTokens, d.TTFT.P99, flagged(direct.Stragglers))
	t.Logf("Prometheus: running %.2f/%.0f KV p50 %.2f prompt %.0f TTFT p99 %.3f stragglers %v", p.Running.Mean, p.Running.Max, p.KVCacheUsage.P50, p.PromptTokens, p.TTFT.P99, flagged(viaProm.Stragglers))
	if d.TTFT.Count == 0 || p.TTFT.Count == 0 {
		t.Fatalf("no TTFT observations: direct %v, Prometheus %v", d.TTFT.Count, p.TTFT.Count)
	}
	for _, c := range []struct {
		what      string
		a, b, tol float64
	}{
		{"prefix hit rate", d.PrefixCacheHitRate, p.PrefixCacheHitRate, 1e-9},
		{"TTFT p50", d.TTFT.P50, p.TTFT.P50, 1e-9},
		{"TTFT p90", d.TTFT.P90, p.TTFT.P90, 1e-9},
		{"TTFT p99", d.TTFT.P99, p.TTFT.P99, 1e-9},
		{"ITL p90", d.ITL.P90, p.ITL.P90, 1e-9},
		{"TTFT mean", d.TTFT.Mean, p.TTFT.Mean, 1e-9},
		{"running max", d.Running.Max, p.Running.Max, 0},
		{"running mean", d.Running.Mean, p.Running.Mean, 1.5},
		{"waiting mean", d.Waiting.Mean, p.Waiting.Mean, 1.5},
		{"KV p50", d.KVCacheUsage.P50, p.KVCacheUsage.P50, 0.1},
		{"KV max", d.KVCacheUsage.Max, p.KVCacheUsage.Max, 1e-9},
		// Counters: the two samplings may see the window's edges up to two
		// ticks apart, out of twenty.
		{"prompt tokens", d.PromptTokens, p.PromptTokens, 0.2 * d.PromptTokens},
		{"generation tokens", d.GenerationTokens, p.GenerationTokens, 0.2 * d.GenerationTokens},
		{"preemptions", d.Preemptions, p.Preemptions, 2},
	} {
		if math.Abs(c.a-c.b) > c.tol {
			t.Errorf("%s: direct %v, Prometheus %v (tolerance %v)", c.what, c.a, c.b, c.tol)
		}
	}
	if len(direct.GPUs) != 4 || len(viaProm.GPUs) != 4 {
		t.Fatalf("GPUs: direct %d, Prometheus %d, want 4", len(direct.GPUs), len(viaProm.GPUs))
	}
	for i := range direct.GPUs {
		a, b := direct.GPUs[i], viaProm.GPUs[i]
		if a.Name() != b.Name() || a.UUID != b.UUID {
			t.Errorf("GPU %d: direct %s %s, Prometheus %s %s", i, a.Name(), a.UUID, b.Name(), b.UUID)
		}
		near(t, a.Name()+" SM active", b.SMActive.Mean, a.SMActive.Mean, 1e-9)
		near(t, a.Name()+" DRAM active", b.DRAMActive.Mean, a.DRAMActive.Mean, 1e-9)
		near(t, a.Name()+" tensor active", b.TensorActive.Mean, a.TensorActive.Mean, 1e-9)
		near(t, a.Name()+" max power", b.PowerW.Max, a.PowerW.Max, 0)
		near(t, a.Name()+" max temperature", b.TemperatureC.Max, a.TemperatureC.Max, 0)
		near(t, a.Name()+" mean SM clock", b.SMClockMHz.Mean, a.SMClockMHz.Mean, 0.05*a.SMClockMHz.Mean)
		near(t, a.Name()+" slowdown fraction", b.SlowdownFraction, a.SlowdownFraction, 0.15)
	}
	for name, s := range map[string]Signals{"direct": direct, "Prometheus": viaProm} {
		if len(s.Stragglers) != 1 || s.Stragglers[0].GPU != "2" {
			t.Errorf("%s: stragglers %v, want node-a/gpu2 only", name, flagged(s.Stragglers))
			continue
		}
		st := s.Stragglers[0]
		wantStart := born.Add(time.Duration(startTick+5) * period)
		wantEnd := born.Add(time.Duration(startTick+13) * period)
		if st.Start.Before(wantStart.Add(-2*period)) || st.Start.After(wantStart.Add(2*period)) ||
			st.End.Before(wantEnd.Add(-3*period)) || st.End.After(wantEnd.Add(2*period)) {
			t.Errorf("%s: straggler window %s–%s, want about %s–%s", name,
				st.Start.Format("15:04:05.000"), st.End.Format("15:04:05.000"), wantStart.Format("15:04:05.000"), wantEnd.Format("15:04:05.000"))
		}
	}
}

// waitForScrapes waits until Prometheus has scraped both jobs successfully.
func waitForScrapes(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape("sum(up)"))
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if strings.Contains(b.String(), `"2"]`) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("prometheus did not scrape both jobs within 30 s")
}

// startPrometheusConfigCheck runs promtool (shipped with Prometheus) on a
// configuration file.
func startPrometheusConfigCheck(t *testing.T, path string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed: apt-get install -y prometheus")
		}
		t.Skip("promtool is not installed (apt-get install -y prometheus)")
	}
	out, err := exec.Command(bin, "check", "config", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config %s: %v\n%s", path, err, out)
	}
}
