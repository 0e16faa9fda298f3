package sim

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestPrometheusScrapesServer starts a real Prometheus (Debian package
// prometheus) that scrapes the simulator's /metrics and /dcgm/metrics, and
// queries the series back through its HTTP API.
func TestPrometheusScrapesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus not found: install it with apt-get install -y prometheus")
		}
		t.Skip("prometheus not found (apt-get install -y prometheus)")
	}
	_, ts := newTestServer(t, nil)
	target := strings.TrimPrefix(ts.URL, "http://")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: vllm
    static_configs: [{targets: [%q]}]
  - job_name: dcgm
    metrics_path: /dcgm/metrics
    static_configs: [{targets: [%q]}]
`, target, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})

	// Some traffic so counters move.
	streamChat(t, ts.URL, `{"messages":[{"role":"user","content":"hello"}],"max_tokens":8,"ignore_eos":true,"stream":true}`)

	query := func(q string) (float64, bool) {
		resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
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
				t.Fatalf("query %s: got %v (found %v) after 30s; prometheus log:\n%s", q, v, found, logs.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
