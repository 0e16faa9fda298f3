package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// TestSGLangLivePlanOnTheStandIn is issue 35's acceptance for flavor
// sglang: a live and a multi-fidelity plan on spoc sim serve
// --sglang-faithful launched as a process, over SGLang's default search
// space. Every phase reaches the
// server, every server got SGLang's flags (and no vLLM flag), the cache
// was flushed between runs rather than flagged warm, telemetry read the
// server's sglang: metrics, and the chosen
// configuration is printed as an SGLang command.
func TestSGLangLivePlanOnTheStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live spoc plan against a separate server process")
	}
	testtool.Long(t, "a live plan on the SGLang stand-in in real time: about a minute")
	t.Parallel()
	for _, fidelity := range []string{"live", "multi"} {
		t.Run(fidelity, func(t *testing.T) { sglangLivePlan(t, fidelity) })
	}
}

// sglangLivePlan runs the plan of TestSGLangLivePlanOnTheStandIn at one
// fidelity: live (every phase on the server) or multi (live probes, the
// simulator's search over SGLang's flags read in its terms, live
// verification and final sweep).
func sglangLivePlan(t *testing.T, fidelity string) {
	spoc := spocBinary(t)
	dir := t.TempDir()
	live := livePlanYAML("process", "H200-SXM", nil)
	_, rest, _ := strings.Cut(live, "workload:")
	rest, _, _ = strings.Cut(rest, "search:")
	cfg := filepath.Join(dir, "sglang.yaml")
	yaml := `engine:
  kind: process
  flavor: sglang
  model: gpt-oss-20b
  gpu: H200-SXM
  gpus: 1
  tensor_parallel_size: 1
  max_model_len: 32768
  process:
    command: [` + `"` + spoc + `"` + `, sim, serve, --sglang-faithful, --model-path, "{{.Model}}", --gpu, H200-SXM, --port, "{{.Port}}"]
    health_timeout: 1m
    stop_timeout: 10s
workload:` + rest + `search:
  trials: 3
  warmup: 1s
  duration: 3s
sweep:
  start: 16
  max: 64
  resolution_users: 4
  resolution_fraction: 0.25
  top_k: 1
  seeds: 1
  min_runs: 3
  max_runs: 3
telemetry:
  enabled: true
plan:
  fidelity: ` + fidelity + `
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	s := readSummary(t, out)
	for _, ph := range s.Phases {
		if (ph.Name == "baseline" || (ph.Name == "tune" && fidelity == "live") || ph.Name == "sweep") && ph.EngineSeconds == 0 && ph.EngineStarts == 0 {
			t.Errorf("phase %s did not reach the server: %+v", ph.Name, ph)
		}
	}
	if !strings.Contains(s.Capacity.Provenance.Version, "sglang-faithful") || s.Capacity.Provenance.Source != "live" {
		t.Errorf("capacity provenance %+v, want live on the SGLang stand-in", s.Capacity.Provenance)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "servers", "server-*", "server.log"))
	if len(logs) < 2 {
		t.Fatalf("%d servers", len(logs))
	}
	searched := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		first, _, _ := strings.Cut(string(b), "\n")
		for _, want := range []string{"--enable-metrics", "--enable-cache-report", "--tp-size 1", "--context-length 32768", "--host 127.0.0.1"} {
			if !strings.Contains(first, want) {
				t.Errorf("%s: command lacks %s: %s", l, want, first)
			}
		}
		if regexp.MustCompile(`--(max-num-seqs|max-num-batched-tokens|gpu-memory-utilization|enable-prompt-tokens-details|tensor-parallel-size|max-model-len)\b`).MatchString(first) {
			t.Errorf("%s: a vLLM flag reached the SGLang server: %s", l, first)
		}
		if strings.Contains(first, "--max-running-requests") {
			searched++
		}
		if strings.Contains(string(b), "unknown flag") {
			t.Errorf("%s: %s", l, b)
		}
	}
	if searched == 0 {
		t.Error("no server ran a searched --max-running-requests")
	}
	// the flush reached the server (no level started warm), and telemetry
	// read SGLang's metrics (sglang:token_usage, sglang:num_running_reqs)
	engineTelemetry := 0
	for _, p := range s.Sweep {
		if p.WarmCache != "" {
			t.Errorf("sweep level %d started warm: %s", p.Users, p.WarmCache)
		}
		if p.HasEngineTelemetry() && p.KVCacheUsageMax > 0 {
			engineTelemetry++
		}
	}
	if engineTelemetry == 0 {
		t.Errorf("no sweep level has engine telemetry from the SGLang metrics: %+v", s.Sweep)
	}
	if !regexp.MustCompile(`(?m)^configuration: \S+ sim serve --sglang-faithful --model-path gpt-oss-20b .*--enable-metrics`).MatchString(stdout) || strings.Contains(stdout, "vllm serve") {
		t.Errorf("the configuration is not printed as an SGLang command line:\n%s", stdout)
	}
	t.Logf("%d servers, %d with a searched --max-running-requests\n%s", len(logs), searched, stdout)
}
