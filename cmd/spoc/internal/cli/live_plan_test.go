package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/plan"
)

// livePlanConfig is a small plan whose engine is a separate `spoc sim
// serve --vllm-faithful` process standing in for vLLM. The server
// simulates an H200 while the configuration names a B200: a plan that
// fell back to the in-process simulator would price the B200 and find
// about twice the users, so the test can tell the two apart. command is
// the process engine's argv template; gpu the configured GPU.
func livePlanConfig(t *testing.T, dir, kind, gpu string, command []string) string {
	t.Helper()
	path := filepath.Join(dir, kind+"-"+gpu+".yaml")
	if err := os.WriteFile(path, []byte(livePlanYAML(kind, gpu, command)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// livePlanYAML is livePlanConfig's file.
func livePlanYAML(kind, gpu string, command []string) string {
	quoted := make([]string, len(command))
	for i, a := range command {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`engine:
  kind: %s
  model: gpt-oss-20b
  gpu: %s
  gpus: 1
  tensor_parallel_size: 1
  max_model_len: 32768
  served_model_name: spoc-live-%d
  process:
    command: [%s]
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
  ttft: {percentile: 95, max: 2s}
  itl: {percentile: 95, max: 200ms}
  e2e: {percentile: 95, max: 1s}
  scope: overall
run:
  users: 8
  ramp: 1s
  warmup: 1s
  duration: 4s
  mid_session_start: false
search:
  trials: 2
  population: 2
  warmup: 1s
  duration: 3s
  space:
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
sweep:
  start: 16
  max: 128
  resolution_users: 2
  resolution_fraction: 0.25
  top_k: 1
  seeds: 2
  min_runs: 3
  max_runs: 4
telemetry:
  enabled: false
plan:
  fidelity: live
`, kind, gpu, time.Now().UnixNano(), strings.Join(quoted, ", "))
}

// simServe is the process engine's command: spoc sim serve as vLLM, on an
// H200 whatever the configuration says.
func simServe(spoc string) []string {
	return []string{spoc, "sim", "serve", "--vllm-faithful", "{{.Model}}", "--port", "{{.Port}}", "--gpu", "H200-SXM"}
}

// runSpoc runs the binary and returns its exit code, stdout and stderr.
func runSpoc(t *testing.T, spoc string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(spoc, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return -1, "", ""
}

func readSummary(t *testing.T, dir string) *plan.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s plan.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// The path a GPU owner takes: spoc plan against a server spoc launches as
// a separate process. Every phase's requests reach that process, every
// number says it is live, each flag set's server is started once per
// contiguous use and reused across levels, and the ceiling agrees (within
// one sweep step) with the in-process simulator of the same hardware.
func TestLivePlanRunsEveryPhaseOnTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs spoc plan against a separate server process for about a minute and a half")
	}
	testtool.Long(t, "a live plan, every phase in real time against a spoc sim serve process: 1-2 min")
	t.Parallel() // mostly waits on real-time load windows: overlaps the others
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := livePlanConfig(t, dir, "process", "B200", simServe(spoc))
	out := filepath.Join(dir, "live")
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("live plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	s := readSummary(t, out)

	// the first run of minutes on a real server is not silent: the server's
	// start and the run's counters are shown before its level is done
	if _, base, ok := strings.Cut(stderr, "== baseline"); !ok || !regexp.MustCompile(`^ \(phase 2/\d+\)\n 0:0\d starting the server for the run at 16 users\n 0:\d\d run at 16 users 0:0\d/0:0\d: \d+ active`).MatchString(base) {
		t.Errorf("the baseline's first run shows no progress before its level is done:\n%s", stderr)
	}
	// each live phase that ran on the engine ends with the plan's engine time so far
	if n := len(regexp.MustCompile(`(?m)^.*(baseline|tune|sweep)\b.*done.*engine time so far \d+s$`).FindAllString(stderr, -1)); n != 3 {
		t.Errorf("%d of the baseline, tune and sweep phases end with the engine time so far, want 3:\n%s", n, stderr)
	}
	if regexp.MustCompile(`(?m)^.*(trace|compare) done.*engine time so far`).MatchString(stderr) {
		t.Errorf("a phase that ran nothing on the engine ends with the engine time so far:\n%s", stderr)
	}

	// provenance: live everywhere, on this process, at its endpoint
	isLive := func(what string, p plan.Provenance) {
		t.Helper()
		if p.Source != "live" || p.Engine != "process" || !strings.HasPrefix(p.Endpoint, "http://127.0.0.1:") || !strings.Contains(p.Version, "vllm-faithful") {
			t.Errorf("%s: provenance %+v, want live on the process engine", what, p)
		}
	}
	isLive("capacity", s.Capacity.Provenance)
	// stdout, pasted alone, still says where the ceiling was measured
	if !regexp.MustCompile(`(?m)^source: live on the process engine at http://127\.0\.0\.1:\d+, server version [^\n]*vllm-faithful[^\n]* \([^\n]*spoc sim serve --vllm-faithful \{\{\.Model\}\} --port \{\{\.Port\}\}[^\n]*\)$`).MatchString(stdout) {
		t.Errorf("stdout does not say the ceiling was measured live:\n%s", stdout)
	}
	for _, p := range s.Sweep {
		isLive(fmt.Sprintf("sweep level %d", p.Users), p.Provenance)
	}
	for _, c := range s.Candidates {
		isLive(fmt.Sprintf("candidate %d", c.Trial), c.Provenance)
	}
	ran := 0
	for _, m := range s.Search.Trials {
		if m.Provenance != nil {
			ran++
			isLive(fmt.Sprintf("trial %d", m.Number), *m.Provenance)
		}
	}
	if ran == 0 || len(s.Sweep) < 2 || len(s.Candidates) == 0 {
		t.Fatalf("trials with provenance %d, sweep levels %d, candidates %d", ran, len(s.Sweep), len(s.Candidates))
	}

	// every server spoc started logged requests, and together at least
	// the sweep's measured requests
	logs, _ := filepath.Glob(filepath.Join(out, "servers", "server-*", "server.log"))
	served := 0
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), `msg="request finished"`)
		if n == 0 {
			t.Errorf("%s: the server served no request", l)
		}
		served += n
	}
	var measured int64
	for _, p := range s.Sweep {
		measured += p.Requests
	}
	if served < int(measured) || measured == 0 {
		t.Errorf("servers logged %d requests; the sweep alone measured %d", served, measured)
	}

	// one server per contiguous flag set: the engine starts the summary
	// counts are the server folders, and each sweep ran on one server
	starts := 0
	for _, ph := range s.Phases {
		starts += ph.EngineStarts
		switch ph.Name {
		case "baseline":
			if ph.EngineStarts != 1 {
				t.Errorf("phase %s started %d servers for one flag set", ph.Name, ph.EngineStarts)
			}
		case "sweep":
			// one flag set: at most one server, none when the server of
			// the chosen candidate's short sweep is still running
			if ph.EngineStarts > 1 {
				t.Errorf("phase %s started %d servers for one flag set", ph.Name, ph.EngineStarts)
			}
		case "workload", "trace", "compare":
			// the server of the last flag set may idle through them
			if ph.EngineStarts != 0 || ph.EngineSeconds > 1 {
				t.Errorf("phase %s used the engine: %+v", ph.Name, ph)
			}
		}
	}
	if starts != len(logs) {
		t.Errorf("summary counts %d engine starts, %d server folders exist", starts, len(logs))
	}
	// a server is restarted only when the flags change, or after it failed
	// (which the plan warns about): otherwise no two servers in a row ran
	// the same command line
	restarted := strings.Contains(stderr, "restarting it") || strings.Contains(stderr, "stopping the server after a failed run")
	sort.Strings(logs)
	prev := ""
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		first, _, _ := strings.Cut(string(b), "\n")
		// the port differs between starts; the flags must
		cmdline := regexp.MustCompile(`--port \S+ `).ReplaceAllString(first, "")
		if cmdline == prev && !restarted {
			t.Errorf("%s: restarted with the same flags, and the plan did not say why: %s\n%s", l, cmdline, stderr)
		}
		prev = cmdline
	}

	// the chosen flags on the same hardware in-process: within one sweep
	// step (the same flags: the live and the simulated studies may choose
	// differently on noise)
	params := make([]string, 0, len(s.Capacity.Config))
	for k, v := range s.Capacity.Config {
		params = append(params, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(params)
	sweep := func(gpu string) (users, step int) {
		t.Helper()
		cfg := livePlanConfig(t, dir, "sim", gpu, simServe(spoc))
		code, stdout, stderr := runSpoc(t, spoc, "sweep", "-c", cfg, "--params", strings.Join(params, ","), "--out", filepath.Join(dir, "sweep-"+gpu), "--json")
		if code != 0 {
			t.Fatalf("in-process sweep on %s: exit %d: %s", gpu, code, stderr)
		}
		var res struct {
			Users      int `json:"users"`
			Resolution int `json:"resolution_users"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("sweep --json: %v\n%s", err, stdout)
		}
		return res.Users, res.Resolution
	}
	simUsers, simStep := sweep("H200-SXM")
	step := max(simStep, s.Capacity.ResolutionUsers)
	// Machine load only lowers a live ceiling: the client and the server
	// share this machine's CPUs, so a busy machine delays tokens and the
	// SLA fails sooner (32 against 48 simulated once, on two shared
	// cores). So the live ceiling is held tightly from above, at most one
	// step over the simulation of the server's hardware: a plan that fell
	// back to simulating the configured B200 (about twice the users), or a
	// client that under-measures latency, breaks that. From below it is
	// held loosely: under half the simulation the live path lost requests
	// or time, which load alone has not done.
	live := s.Capacity.Users
	if live > simUsers+step || live < simUsers/2 {
		t.Errorf("live ceiling %d users, in-process simulation of the server's hardware %d with the same flags (step %d): want within [%d, %d]; load average %s",
			live, simUsers, step, simUsers/2, simUsers+step, loadAverage())
	}
	// and a silent fallback to the configured hardware would break the
	// upper bound
	if fb, _ := sweep("B200"); fb <= simUsers+step {
		t.Errorf("the configured B200 simulated gives %d users, the server's H200 %d (step %d): the test cannot tell a fallback", fb, simUsers, step)
	}
	t.Logf("live %d users; in process on an H200 %d (step %d); %d servers, %d requests served; load average %s", live, simUsers, step, len(logs), served, loadAverage())
}

// loadAverage is the machine's load average (Linux), for messages about
// timing under load.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// previousReport puts a marked report in out, as an earlier plan left it.
func previousReport(t *testing.T, out string) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.json", "report.html", "summary.md"} {
		if err := os.WriteFile(filepath.Join(out, f), []byte(previousContent(f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// previousContent is a previous plan's file: its summary.json is a plan
// summary (spoc_version), so the folder is a plan's own and its records
// may be replaced.
func previousContent(f string) string {
	if f == "summary.json" {
		return `{"spoc_version": "previous", "title": "previous summary.json"}`
	}
	return "previous " + f
}

func checkPreviousReport(t *testing.T, out string) {
	t.Helper()
	for _, f := range []string{"summary.json", "report.html", "summary.md"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || string(b) != previousContent(f) {
			t.Errorf("%s changed: %q %v", f, b, err)
		}
	}
}

// An engine that never comes up: plan names the phase and why, prints no
// capacity, exits non-zero and leaves the previous report as it was.
func TestLivePlanEngineNeverHealthy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the spoc binary")
	}
	t.Parallel()
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := livePlanConfig(t, dir, "process", "B200", []string{"/bin/false", "{{.Port}}"})
	out := filepath.Join(dir, "out")
	previousReport(t, out)
	code, stdout, stderr := runSpoc(t, spoc, "plan", "-c", cfg, "--out", out)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	if strings.Contains(stdout, "capacity") || strings.Contains(stdout, "users") {
		t.Errorf("a capacity was printed:\n%s", stdout)
	}
	if !strings.Contains(stderr, "baseline: ") || !strings.Contains(stderr, "server exited early") || !strings.Contains(stderr, "no capacity established") {
		t.Errorf("stderr does not name the phase and the reason:\n%s", stderr)
	}
	checkPreviousReport(t, out)
}

// An engine that dies in the middle of the sweep: the plan stops at that
// level with the server's log, exits non-zero, prints no capacity and
// leaves the previous report (and records) as they were.
func TestLivePlanEngineKilledDuringSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs spoc plan against a separate server process for about half a minute")
	}
	testtool.Long(t, "a live plan in real time whose engine is killed during the sweep: about 35 s")
	t.Parallel() // mostly waits on real-time load windows: overlaps the others
	spoc := spocBinary(t)
	dir := t.TempDir()
	cfg := livePlanConfig(t, dir, "process", "B200", simServe(spoc))
	b, _ := os.ReadFile(cfg)
	// fewer trials: the point is the sweep
	b = bytes.Replace(b, []byte("trials: 2\n  population: 2"), []byte("trials: 1\n  population: 2"), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	marker := "spoc-live-" // the served name starts so; each test's config has a unique suffix
	i := bytes.Index(b, []byte(marker))
	marker = string(b[i : i+bytes.IndexByte(b[i:], '\n')])
	out := filepath.Join(dir, "out")
	previousReport(t, out)
	if err := os.MkdirAll(filepath.Join(out, "records"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "records", "users-00001.jsonl"), []byte("previous\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(spoc, "plan", "-c", cfg, "--out", out)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var stderr strings.Builder
	killed := make(chan []int, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		inSweep, levels := false, 0
		for sc.Scan() {
			line := sc.Text()
			stderr.WriteString(line + "\n")
			if strings.HasPrefix(line, "== sweep") {
				inSweep = true
			}
			if inSweep && strings.Contains(line, " users ") {
				if levels++; levels == 1 {
					// the second level runs for 5 s from now: kill its
					// server in the middle of it (a server found dead
					// between levels is restarted instead)
					time.Sleep(2 * time.Second)
					pids := processesWith(marker)
					for _, pid := range pids {
						syscall.Kill(pid, syscall.SIGKILL)
					}
					killed <- pids
				}
			}
		}
		close(killed)
		io.Copy(io.Discard, errPipe)
	}()
	err = cmd.Wait()
	pids := <-killed
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure {
		t.Fatalf("plan after the server was killed: %v, want exit %d\n%s", err, ExitFailure, stderr.String())
	}
	if len(pids) == 0 {
		t.Fatalf("no server process found to kill\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "capacity") {
		t.Errorf("a capacity was printed:\n%s", stdout.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "sweep: ") || !strings.Contains(msg, "the server is gone") {
		t.Errorf("stderr does not name the sweep and the dead server:\n%s", msg)
	}
	checkPreviousReport(t, out)
	if b, err := os.ReadFile(filepath.Join(out, "records", "users-00001.jsonl")); err != nil || string(b) != "previous\n" {
		t.Errorf("previous records replaced: %q %v", b, err)
	}
}
