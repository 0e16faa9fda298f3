package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTuneInterruptedLeavesNoServerAndResumes runs the real binary: spoc
// tune with the process engine launching `spoc sim serve` per trial, loaded
// over HTTP. SIGINT in the middle of the first trial's load must stop the
// server (no process left), exit 130, and leave a study that the same
// command then completes.
func TestTuneInterruptedLeavesNoServerAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/spoc and runs real servers; skipped with -short")
	}
	t.Parallel() // real servers and a real signal: waits more than it computes
	dir := t.TempDir()
	spoc := spocBinary(t)
	marker := fmt.Sprintf("tune-sigint-%d", time.Now().UnixNano())
	cfg := writeTuneConfig(t, fmt.Sprintf(`
engine:
  kind: process
  model: gpt-oss-120b
  served_model_name: %s
  process:
    command: [%q, sim, serve, --port, "{{.Port}}", --model, "{{.Model}}", --served-model-name, %s, --time-scale, "20"]
    health_timeout: 1m
    stop_timeout: 10s
search:
  trials: 2
  population: 2
  users: 4
  duration: 4s
  warmup: 1s
  space:
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
run:
  ramp: 0s
  think_time_scale: 0
telemetry:
  enabled: false
`, marker, spoc, marker))
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(spoc, "tune", "-c", cfg, "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// Wait until the first trial's server is under load.
	logPath := filepath.Join(out, "servers", "server-001", "server.log")
	deadline := time.Now().Add(90 * time.Second)
	for !serverBusy(logPath) {
		if time.Now().After(deadline) {
			t.Fatalf("first trial never got load; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pids := processesWith(marker); len(pids) == 0 {
		t.Fatal("server process not found while the trial runs")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("spoc tune after SIGINT: %v, want exit %d; stderr:\n%s", err, ExitInterrupted, stderr.String())
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Errorf("server processes %v survived Ctrl-C", pids)
	}
	if !strings.Contains(stderr.String(), "run the same command to continue") {
		t.Errorf("no resume hint; stderr:\n%s", stderr.String())
	}

	again := exec.Command(spoc, "tune", "-c", cfg, "--out", out)
	b, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("resumed tune: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "2/2 ETA 0:00 #") || !strings.Contains(string(b), `study "default": 3 trials (COMPLETE 2, FAIL 1)`) {
		t.Errorf("resumed study did not complete its budget:\n%s", b)
	}
	// each trial of real seconds shows its server's start and its counters
	// before its trial line
	if !regexp.MustCompile(`starting the server for the run at 4 users\n[^\n]*run at 4 users 0:0\d/0:05: \d+ active`).Match(b) {
		t.Errorf("the trials' runs show no progress:\n%s", b)
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Errorf("server processes %v left after the study", pids)
	}
}

// serverBusy reports whether the server whose log is at path is running
// requests, reading its port from the log's first line.
func serverBusy(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	m := regexp.MustCompile(`--port (\d+)`).FindSubmatch(b)
	if m == nil {
		return false
	}
	client := &http.Client{Timeout: time.Second}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://127.0.0.1:"+string(m[1])+"/metrics", nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "vllm:num_requests_running{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v > 0
		}
	}
	return false
}

// processesWith lists running (not zombie) processes whose command line
// contains s.
func processesWith(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
