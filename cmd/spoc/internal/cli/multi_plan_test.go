package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/plan"
)

// multiPlanConfig is a small plan on a foreign engine: spoc sim serve as a
// process simulating an H100 while the configuration says H200, so the
// planner's built-in cost model is wrong about it and the multi plan has
// something to calibrate. extra is appended to the plan section.
func multiPlanConfig(t *testing.T, dir, spoc, extra string, serverArgs ...string) string {
	t.Helper()
	body := fmt.Sprintf(`engine:
  kind: process
  model: gpt-oss-20b
  gpu: H200-SXM
  gpus: 1
  tensor_parallel_size: 1
  max_model_len: 32768
  served_model_name: spoc-multi-%d
  process:
    command: [%q, sim, serve, --vllm-faithful, "{{.Model}}", --port, "{{.Port}}", --gpu, H100-SXM%s]
    health_timeout: 1m
    stop_timeout: 10s
workload:
  profiles:
    - name: P0
      weight: 1
      context_start: {kind: lognormal, median: 1500, sigma: 0.2, min: 800, max: 3000}
      max_context: 8000
      growth: {kind: lognormal, median: 200, sigma: 0.3, min: 50, max: 600}
      output_tokens: {kind: lognormal, median: 100, sigma: 0.2, min: 60, max: 150}
      think_time_s: {kind: constant, value: 0.5}
      at_max: new-session
  geometry: {kind: none}
sla:
  ttft: {percentile: 95, max: 1s}
  itl: {percentile: 95, max: 25ms}
  e2e: {percentile: 95, max: 3s}
  scope: overall
run:
  users: 8
  ramp: 1s
  warmup: 2s
  duration: 3s
  mid_session_start: false
search:
  trials: 4
  population: 2
  warmup: 2s
  duration: 4s
  space:
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
sweep:
  start: 8
  max: 256
  resolution_users: 2
  resolution_fraction: 0.1
  top_k: 1
  seeds: 2
  min_runs: 3
  max_runs: 4
telemetry:
  enabled: false
plan:
  fidelity: multi
%s`, time.Now().UnixNano(), spoc, argList(serverArgs), extra)
	path := filepath.Join(dir, "multi.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The multi plan against a foreign engine: probes, the fit, the search
// and verification are visible in progress and in summary.json; every
// live number is live, the search's are simulated-calibrated; the engine
// time spoc counts agrees with what the server processes counted of
// themselves; and spoc sim calibrate --records fits a correction from the
// plan's folder by hand that a configuration can name.
func TestMultiPlanOnAForeignEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a multi-fidelity plan against a separate server process for about a minute")
	}
	testtool.Long(t, "a live multi plan in real time against a spoc sim serve process: 2-7 min on 2 cores")
	// not t.Parallel: beside the live plans' servers on a loaded machine
	// (load ~20) the fit read the contention as a faster engine (probes'
	// ITL p95 35.6 ms calibrated vs 39.9 ms built-in) and failed
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := multiPlanConfig(t, dir, spoc, "")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("multi plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, phase := range []string{"== probe", "== calibrate", "== search", "== verify", "== sweep"} {
		if !strings.Contains(stderr, phase) {
			t.Errorf("no progress for %q:\n%s", phase, stderr)
		}
	}
	s := readSummary(t, out)
	f := s.Fidelity
	if f == nil || f.Mode != plan.FidelityMulti {
		t.Fatalf("fidelity section %+v", f)
	}
	if len(f.Probes) != len(plan.ProbeLoads)+1 || f.Correction == nil || f.Fit == nil || len(f.Verified) < 2 || f.PredictedCeiling == 0 {
		t.Fatalf("probes %d, correction %v, fit %v, verified %d, predicted %d", len(f.Probes), f.Correction, f.Fit, len(f.Verified), f.PredictedCeiling)
	}
	for i, p := range f.Probes {
		if p.Provenance.Source != "live" || p.Live.OutputThroughput <= 0 || p.Attempts != 1 {
			t.Errorf("probe %d: %+v", i+1, p)
		}
		// later turns reuse a session's earlier ones: the server reports
		// cached prompt tokens, and so does the simulator's replay
		if p.Live.PrefixCacheHitRate <= 0 || p.Calibrated.PrefixCacheHitRate <= 0 {
			t.Errorf("probe %d: prefix-cache hit rate live %.3f, simulated %.3f", i+1, p.Live.PrefixCacheHitRate, p.Calibrated.PrefixCacheHitRate)
		}
	}
	// an H100 is slower than the H200 the configuration names: the fit
	// slows the simulator's steps down (how it splits that between its
	// terms depends on the machine: a loaded one adds per-step delay to the
	// server's loop), and gets closer to the probes than the built-in model
	var calibrated, builtin float64
	for _, p := range f.Probes {
		calibrated += p.Calibrated.ITLP95Ms
		builtin += p.Uncalibrated.ITLP95Ms
	}
	if calibrated <= builtin {
		t.Errorf("correction %+v does not slow the H200 model towards the H100 server: the probes' ITL p95 sums to %.1f ms calibrated, %.1f ms built-in", f.Correction.Normal(), calibrated, builtin)
	}
	if f.Fit.FittedError == nil || f.Fit.UncalibratedError == nil {
		t.Errorf("fit errors absent: %s", f.Fit.ErrorsAbsent)
	} else if *f.Fit.FittedError >= *f.Fit.UncalibratedError {
		t.Errorf("fitted error %.3f not below the built-in model's %.3f", *f.Fit.FittedError, *f.Fit.UncalibratedError)
	}
	for _, v := range f.Verified {
		if v.Provenance.Source != "live" {
			t.Errorf("verified point %d: provenance %+v", v.Users, v.Provenance)
		}
	}
	if s.Capacity.Provenance.Source != "live" || s.Capacity.Users == 0 {
		t.Errorf("capacity %d users from %+v, want a live ceiling", s.Capacity.Users, s.Capacity.Provenance)
	}
	for _, c := range s.Candidates {
		if c.Provenance.Source != "simulated-calibrated" {
			t.Errorf("candidate %d: provenance %+v, want simulated-calibrated", c.Trial, c.Provenance)
		}
	}
	// spoc's engine time and the servers' own count of their up time
	logs, _ := filepath.Glob(filepath.Join(out, "servers", "server-*", "server.log"))
	upRE := regexp.MustCompile(`engine usage: up ([0-9.]+)s`)
	var up float64
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		m := upRE.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no engine usage line", l)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		up += v
	}
	if f.LiveEngineSeconds <= 0 || up < 0.9*f.LiveEngineSeconds || up > 1.1*f.LiveEngineSeconds {
		t.Errorf("spoc counted %.1f engine-seconds, the servers %.1f", f.LiveEngineSeconds, up)
	}
	if f.GPUHours <= 0 || f.EngineSeconds["probe"] <= 0 || f.EngineSeconds["search"] != 0 {
		t.Errorf("engine time by phase %v, GPU-hours %v", f.EngineSeconds, f.GPUHours)
	}

	// the same fit by hand, from the plan's folder
	corr := filepath.Join(dir, "correction.json")
	code, stdout, stderr = runSpoc(t, spoc, "sim", "calibrate", "--records", out, "-c", cfg, "-o", corr, "--json")
	if code != 0 {
		t.Fatalf("sim calibrate --records: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var fit plan.CorrectionFit
	if err := json.Unmarshal([]byte(stdout), &fit); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	// every probe and every verified point that ran live (a point verified
	// again after a refit is the same run)
	var manifest []plan.FitRun
	if b, err := os.ReadFile(filepath.Join(out, plan.RunsManifest)); err != nil || json.Unmarshal(b, &manifest) != nil {
		t.Fatalf("read %s: %v", plan.RunsManifest, err)
	}
	if fit.Runs != len(manifest) || fit.Runs < len(f.Probes)+2 || fit.Fit.HeldBackError == nil || fit.Correction.Memory <= 0 {
		t.Errorf("fit by hand of %d runs: %+v", len(manifest), fit)
	}
	// a configuration names it: the simulator's sweep uses it
	b, _ := os.ReadFile(cfg)
	withCorr := strings.Replace(string(b), "  gpu: H200-SXM\n", "  gpu: H200-SXM\n  sim:\n    correction: "+corr+"\n", 1)
	simCfg := filepath.Join(dir, "corrected.yaml")
	if err := os.WriteFile(simCfg, []byte(strings.Replace(withCorr, "kind: process", "kind: sim", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runSpoc(t, spoc, "sim", "run", "-c", simCfg, "--users", "8"); code != 0 {
		t.Errorf("sim run with engine.sim.correction: exit %d\n%s", code, stderr)
	}
}

// A budget too small for the probes is refused before anything starts,
// with exit 2 and the minimum named; --estimate prints each fidelity's
// engine time and starts the engine only to time its start-up.
func TestMultiPlanBudgetAndEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the spoc binary")
	}
	t.Parallel() // waits on the engine's start-up: overlaps the others
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := multiPlanConfig(t, dir, spoc, "  budget: 10s\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != ExitUsage || !strings.Contains(stderr, "plan.budget 10s is too small for a multi plan: it needs at least") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d naming the minimum", code, stdout, stderr, ExitUsage)
	}
	if _, err := os.Stat(filepath.Join(out, "servers")); !os.IsNotExist(err) {
		t.Errorf("a refused plan started a server (%v)", err)
	}
	code, stdout, stderr = runSpoc(t, spoc, "plan", "-c", cfg, "--estimate", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("--estimate: exit %d\n%s", code, stderr)
	}
	// it says that it starts the engine once and why, then a line per
	// phase of each fidelity's count
	for _, want := range []string{"plan.engine_startup is not set, so the process engine is started once", "the engine answered after",
		"estimate live: running the plan's control flow on the simulator", "estimate live: phase 1/5 baseline", "estimate multi: phase 4/5 verify"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--estimate's progress lacks %q:\n%s", want, stderr)
		}
	}
	var est plan.Estimate
	if err := json.Unmarshal([]byte(stdout), &est); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !strings.HasPrefix(est.StartupSource, "measured") || est.StartupSeconds <= 0 || est.StartupSeconds > 60 {
		t.Errorf("start-up %.1f s (%s)", est.StartupSeconds, est.StartupSource)
	}
	rows := map[string]plan.EstimateRow{}
	for _, r := range est.Rows {
		rows[r.Fidelity] = r
	}
	if l, m := rows["live"], rows["multi"]; l.Runs <= m.Runs || m.Runs == 0 || m.EngineSeconds >= l.EngineSeconds || m.MinimumSeconds <= 10 {
		t.Errorf("live %+v, multi %+v", l, m)
	}
	// the live plan's other branch: a study with no feasible trial skips
	// the choose and default phases
	if l := rows["live"]; l.IfNoFeasibleSeconds <= 0 || l.IfNoFeasibleSeconds >= l.EngineSeconds || !strings.Contains(l.Note, "if the study finds no feasible trial") {
		t.Errorf("live row without the no-feasible-trial branch: %+v", l)
	}
	if m := rows["multi"]; m.IfNoFeasibleSeconds != 0 {
		t.Errorf("multi row with a no-feasible-trial branch: %+v", m)
	}
}

func argList(args []string) string {
	var b strings.Builder
	for _, a := range args {
		fmt.Fprintf(&b, ", %q", a)
	}
	return b.String()
}

// A probe whose run fails (here: a server answering every request with
// HTTP 500) is retried once on a new server, then the plan fails naming
// the probe: no simulated number stands in for it, and no capacity is
// printed.
func TestMultiPlanFailingProbeIsRetriedThenReported(t *testing.T) {
	if testing.Short() {
		t.Skip("runs spoc plan against a separate server process")
	}
	t.Parallel() // real time against a server process of its own
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := multiPlanConfig(t, dir, spoc, "", "--error-rate", "1")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != ExitFailure || strings.Contains(stdout, "capacity") {
		t.Fatalf("exit %d, stdout %q; want %d and no capacity\n%s", code, stdout, ExitFailure, stderr)
	}
	if !strings.Contains(stderr, "probe: probe 1 at") || !strings.Contains(stderr, "failed 2 times; no simulated number replaces it") ||
		!strings.Contains(stderr, "HTTP 500") || len(regexp.MustCompile(`(?m)^ \d+:\d\d probe 1 \(`).FindAllString(stderr, -1)) != 2 {
		t.Errorf("stderr does not report the probe's two failures:\n%s", stderr)
	}
	if logs, _ := filepath.Glob(filepath.Join(out, "servers", "server-*")); len(logs) != 2 {
		t.Errorf("%d servers started, want 2 (the probe and its retry)", len(logs))
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); !os.IsNotExist(err) {
		t.Errorf("a failed plan wrote summary.json (%v)", err)
	}
}
