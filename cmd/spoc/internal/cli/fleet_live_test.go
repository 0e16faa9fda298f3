package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// fleetYAML is issue 32's workload on three replicas (one H100 each) with
// windows short enough for the long lane; kind is process (three `spoc sim
// serve` servers behind the HAProxy spoc starts) or sim. The model is
// gpt-oss-120b, not docs/fleet.md's 20b: its weights leave an H100 a
// fifth of the KV cache, so the fleet's ceiling (about 36–40 users, where
// queued prefills push TTFT over its limit) streams about 1,000 tokens/s. With
// the 20b the ceiling is near 110 users and 3,000 tokens/s, which three
// real-time servers, HAProxy and the client cannot keep up with on two
// cores: live runs at 96 users read ITL p95 55 ms against the
// simulator's 16 and the client-bound check left them unjudged (CI, and
// a quiet machine here), so the live sweep measured the machine. On two
// cores shared by three real-time servers, HAProxy and the client a few
// dispatches a run still start 5–11 ms late (a run at 12 users has about
// 60 requests, so its p99 is its latest one). TTFT counts from the
// scheduled time, so a late dispatch adds to it, but 25 ms is under 2 %
// of the 1.5 s TTFT limit and ITL does not see it: this test allows
// 25 ms where a plan allows 10.
func fleetYAML(kind, router, spoc, haproxy string) string {
	return fmt.Sprintf(`engine:
  kind: %s
  model: gpt-oss-120b
  gpu: H100-SXM
  gpus: 3
  tensor_parallel_size: 1
  process:
    command: [%q, sim, serve, --port, "{{.Port}}", --model, "{{.Model}}", --gpu, H100-SXM, --gpus, "1"]
    health_timeout: 1m
    stop_timeout: 10s
fleet:
  router: %s
  haproxy: %q
workload:
  profiles:
    - name: coder
      weight: 1
      context_start: {kind: constant, value: 12000}
      max_context: 40000
      growth: {kind: constant, value: 2500}
      output_tokens: {kind: lognormal, median: 400, sigma: 0.6, min: 16, max: 4096}
      think_time_s: {kind: exponential, mean: 3}
      at_max: new-session
sla:
  ttft: {percentile: 95, max: 1500ms}
  itl: {percentile: 95, max: 60ms}
run:
  ramp: 4s
  warmup: 20s
  duration: 30s
  mid_session_start: true
  client_bound_lag_p99: 25ms
telemetry:
  enabled: false
sweep:
  resolution_users: 6
  resolution_fraction: 0.05
  seeds: 1
  precision: 0
`, kind, spoc, router, haproxy)
}

var ceilingLine = regexp.MustCompile(`capacity ceiling: (\d+) users`)

func sweepCeiling(t *testing.T, spoc, dir, kind, router, grid, haproxy string) int {
	t.Helper()
	cfg := filepath.Join(dir, kind+"-"+router+".yaml")
	if err := os.WriteFile(cfg, []byte(fleetYAML(kind, router, spoc, haproxy)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runSpoc(t, spoc, "sweep", "-c", cfg, "--seeds", "1", "--users", grid, "-o", filepath.Join(dir, kind+"-"+router))
	m := ceilingLine.FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("spoc sweep (%s, %s): exit %d\n%s\n%s", kind, router, code, stdout, stderr)
	}
	t.Logf("%s %s:\n%s", kind, router, stderr)
	n, _ := strconv.Atoi(m[1])
	return n
}

// Issue 32's acceptance, shortened: three `spoc sim serve` replicas behind
// the HAProxy spoc starts, session affinity on X-Session-Id, swept live; the
// simulated fleet with the same router and configuration lands within one
// sweep step (6 users) or 10 % of it. docs/fleet.md has the full
// measurement with both routers and repeats.
func TestLiveFleetBehindHAProxyMatchesTheSimulatedFleet(t *testing.T) {
	testtool.Long(t, "a live sweep of three spoc sim serve replicas behind HAProxy in real time: about 5 min; the replicas keep real time only on a machine that is not overloaded")
	haproxy := testtool.Find(t, "apt-get install -y haproxy", "haproxy")
	spoc := spocBinary(t)
	dir := t.TempDir()
	const grid = "12,24,36,48"
	live := sweepCeiling(t, spoc, dir, "process", "session-affinity", grid, haproxy)
	simulated := sweepCeiling(t, spoc, dir, "sim", "session-affinity", grid, haproxy)
	if d := live - simulated; max(d, -d) > max(6, live/10) {
		t.Errorf("session affinity: live fleet %d users, simulated %d: more than one sweep step (6) or 10 %% apart", live, simulated)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "process-session-affinity", "servers", "server-*", "replica-*.log"))
	cfgs, _ := filepath.Glob(filepath.Join(dir, "process-session-affinity", "servers", "server-*", "haproxy.cfg"))
	if len(logs) < 3 || len(cfgs) == 0 {
		t.Fatalf("the live sweep left %d replica logs and %d HAProxy configurations; want three replicas behind HAProxy", len(logs), len(cfgs))
	}
	if b, _ := os.ReadFile(cfgs[0]); !strings.Contains(string(b), "balance hdr(X-Session-Id)") {
		t.Errorf("haproxy.cfg does not hash the session header:\n%s", b)
	}
}
