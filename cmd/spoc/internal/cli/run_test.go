package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
)

const smallWorkload = `workload:
  profiles:
    - name: P0
      weight: 0.5
      context_start: {kind: lognormal, median: 200, sigma: 0.2, min: 100, max: 400}
      max_context: 2000
      growth: {kind: lognormal, median: 50, sigma: 0.3, min: 10, max: 200}
      output_tokens: {kind: lognormal, median: 10, sigma: 0.2, min: 4, max: 20}
      think_time_s: {kind: lognormal, median: 0.02, sigma: 0.2, min: 0.01, max: 0.1}
      at_max: new-session
    - name: P1
      weight: 0.5
      context_start: {kind: lognormal, median: 300, sigma: 0.2, min: 100, max: 600}
      max_context: 3000
      growth: {kind: lognormal, median: 50, sigma: 0.3, min: 10, max: 200}
      output_tokens: {kind: lognormal, median: 10, sigma: 0.2, min: 4, max: 20}
      think_time_s: {kind: lognormal, median: 0.02, sigma: 0.2, min: 0.01, max: 0.1}
      at_max: new-session
  geometry: {kind: partial-common-ground, system_tokens: 50, root_tokens: 2000, root_fraction: 0.5, teams: 2, team_zipf_s: 1, team_tokens: 500, team_fraction: 0.3}
`

func runLoadCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunAndSummarize(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: time.Millisecond, KeepLog: true})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	if err := os.WriteFile(cfg, []byte(smallWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := filepath.Join(dir, "r.jsonl")
	t.Setenv("SPOC_TEST_KEY", "sk-never-in-records")
	code, stdout, stderr := runLoadCLI(t, "run", "-c", cfg, "--target", srv.URL, "--users", "4", "--duration", "1500ms",
		"--warmup", "200ms", "--ramp", "100ms", "--out", recs, "--json", "--api-key-env", "SPOC_TEST_KEY")
	if code != 0 || strings.Contains(stderr, "hint:") {
		t.Fatalf("run exit %d: %s", code, stderr)
	}
	var res result.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, stdout)
	}
	if res.Overall.OK == 0 || len(res.Profiles) != 2 || res.Window.Inferred {
		t.Fatalf("result %+v", res.Overall)
	}
	data, err := os.ReadFile(recs)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("sk-never")) {
		t.Fatal("API key in records")
	}
	// nor in anything else the run wrote or printed
	if strings.Contains(stdout+stderr, "sk-never") {
		t.Fatal("API key in the run's output")
	}
	if err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(path); err != nil || bytes.Contains(b, []byte("sk-never")) {
			t.Errorf("API key in %s (%v)", path, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, q := range srv.Log() {
		if i == 0 {
			// the preflight's one-token request
			if q.MaxTokens != 1 || !q.Authorization {
				t.Fatalf("first request is not the preflight: %+v", q)
			}
			continue
		}
		if !q.Authorization || !q.IgnoreEOS || q.MinTokens != q.MaxTokens {
			t.Fatalf("request %+v", q)
		}
	}

	code, stdout, _ = runLoadCLI(t, "summarize", recs, "-c", cfg)
	if code != 0 || !strings.Contains(stdout, "SLA (per-profile): pass") || !strings.Contains(stdout, "source: live on the external engine at "+srv.URL) {
		t.Fatalf("summarize exit %d:\n%s", code, stdout)
	}
	// summarize uses the run's own window (kept beside the records), so it
	// states the run's throughput, not one over a window inferred from them
	code, stdout, _ = runLoadCLI(t, "summarize", recs, "-c", cfg, "--json")
	var again result.Result
	if err := json.Unmarshal([]byte(stdout), &again); err != nil || code != 0 {
		t.Fatalf("summarize --json: exit %d, %v", code, err)
	}
	if again.Window.Inferred || again.Overall.OutputTokensPerSecond != res.Overall.OutputTokensPerSecond || again.Overall.Requests != res.Overall.Requests {
		t.Errorf("summarize: window %+v, %.1f tok/s over %d requests; the run said %.1f over %d",
			again.Window, again.Overall.OutputTokensPerSecond, again.Overall.Requests, res.Overall.OutputTokensPerSecond, res.Overall.Requests)
	}
	strict := filepath.Join(dir, "strict.yaml")
	if err := os.WriteFile(strict, []byte(smallWorkload+"sla:\n  ttft: {percentile: 50, max: 1us}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runLoadCLI(t, "summarize", recs, "-c", strict, "--check")
	if code != ExitSLANotMet || !strings.Contains(stdout, "ttft p50") {
		t.Fatalf("summarize --check exit %d, want %d:\n%s", code, ExitSLANotMet, stdout)
	}
	// A killed run leaves a truncated last line: skipped with a warning.
	cut := filepath.Join(dir, "cut.jsonl")
	if err := os.WriteFile(cut, data[:len(data)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runLoadCLI(t, "summarize", cut, "-c", cfg, "--json")
	if code != 0 || !strings.Contains(stderr, "truncated") {
		t.Fatalf("summarize truncated: exit %d, stderr %q", code, stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--out", "x.jsonl"},
		{"run", "--target", "http://localhost:1"},
		{"run", "--target", "http://localhost:1", "--out", "x", "--users", "0"},
		{"run", "--target", "localhost:8000", "--out", "x", "--users", "1", "--duration", "1s"},
		{"run", "--target", "ftp://localhost:8000", "--out", "x", "--users", "1", "--duration", "1s"},
		{"summarize"},
	} {
		if code, _, _ := runLoadCLI(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}

// An unreachable server is one error naming the target (exit 1), before any
// records file is created.
func TestRunUnreachableTarget(t *testing.T) {
	srv := testserver.Start(testserver.Config{})
	target := srv.URL
	srv.Close() // nothing listens there any more
	recs := filepath.Join(t.TempDir(), "r.jsonl")
	code, _, stderr := runLoadCLI(t, "run", "--target", target, "--users", "1", "--duration", "1s", "-o", recs)
	if code != ExitFailure || !strings.Contains(stderr, "not reachable") || !strings.Contains(stderr, target) {
		t.Fatalf("exit %d, stderr %q; want exit %d naming %s as not reachable", code, stderr, ExitFailure, target)
	}
	if _, err := os.Stat(recs); !os.IsNotExist(err) {
		t.Errorf("records file left behind: %v", err)
	}
}

// An empty records file is an error, not a run that measured nothing.
func TestSummarizeEmptyFile(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runLoadCLI(t, "summarize", empty)
	if code != ExitFailure || !strings.Contains(stderr, "holds no records") || !strings.Contains(stderr, empty) {
		t.Fatalf("exit %d, stderr %q; want exit 1 saying %s holds no records", code, stderr, empty)
	}
}

// TestRunHintsWhenWindowIsEmpty: turns longer than warm-up plus window leave
// no request scheduled inside the window; the run says why.
func TestRunHintsWhenWindowIsEmpty(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: 100 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	if err := os.WriteFile(cfg, []byte(smallWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runLoadCLI(t, "run", "-c", cfg, "--target", srv.URL, "--users", "2", "--duration", "300ms",
		"--warmup", "200ms", "--ramp", "50ms", "--out", filepath.Join(dir, "r.jsonl"), "--quiet")
	if code != 0 || !strings.Contains(stderr, "hint: no user started a turn inside the 300ms window") || !strings.Contains(stderr, "lengthen --duration") {
		t.Fatalf("run exit %d, stderr:\n%s", code, stderr)
	}
}

// Ctrl-C during spoc run (an external server: spoc does not own it) stops
// the run, prints what was measured and exits 130; the log says the server
// keeps running and never that spoc stops it.
func TestRunInterruptedSaysTheServerKeepsRunning(t *testing.T) {
	t.Parallel() // a run of real seconds against its own server
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: 5 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	if err := os.WriteFile(cfg, []byte(smallWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"run", "-c", cfg, "--target", srv.URL, "--users", "2", "--duration", "1m", "--warmup", "100ms", "--ramp", "50ms",
		"--out", filepath.Join(dir, "r.jsonl"), "--quiet"}, &stdout, &stderr)
	if code != ExitInterrupted {
		t.Fatalf("exit %d after Ctrl-C, want %d\n%s", code, ExitInterrupted, stderr.String())
	}
	msg := stderr.String()
	if strings.Contains(msg, "stopping the server") || !strings.Contains(msg, "the external server keeps running") || !strings.Contains(msg, "spoc: interrupted; ") {
		t.Errorf("stderr after Ctrl-C:\n%s", msg)
	}
	if !strings.Contains(stdout.String(), "source: live on the external engine") {
		t.Errorf("what was measured before Ctrl-C is not printed:\n%s", stdout.String())
	}
}

// spoc sweep against an external server shows each level's run from its
// first second, before the level's line: a sweep of minute-long levels is
// not silent.
func TestSweepShowsLiveRunsFromTheFirstSecond(t *testing.T) {
	t.Parallel() // real seconds against its own server
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: 5 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	writeFile(t, cfg, smallWorkload+`engine:
  kind: external
  external:
    url: `+srv.URL+`
run:
  ramp: 100ms
  warmup: 500ms
  duration: 1500ms
sweep:
  start: 2
  max: 2
  seeds: 1
telemetry:
  enabled: false
`)
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"sweep", "-c", cfg, "--out", filepath.Join(dir, "out")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !regexp.MustCompile(`\n 0:0\d run at 2 users 0:01/0:02: \d+ active \d+ in flight \d+ done 0 errors ttft95 \S+ itl95 \S+\n[^\n]* grid 2 users `).MatchString(stderr.String()) {
		t.Errorf("no progress line before the level's:\n%s", stderr.String())
	}
}

// spoc run never truncates an existing --out before its preflight: a run
// that fails there leaves the earlier run's records and sidecar as they
// were, and no temporary file behind.
func TestRunKeepsAnExistingOutWhenThePreflightFails(t *testing.T) {
	srv := testserver.Start(testserver.Config{})
	target := srv.URL
	srv.Close() // nothing listens there any more
	dir := t.TempDir()
	recs := filepath.Join(dir, "r.jsonl")
	writeFile(t, recs, "{\"an earlier run's records\": true}\n")
	writeFile(t, result.RunInfoPath(recs), "{\"window\": {\"start\": \"2020-01-01T00:00:00Z\", \"end\": \"2020-01-01T00:01:00Z\"}}\n")
	code, _, stderr := runLoadCLI(t, "run", "--target", target, "--users", "1", "--duration", "1s", "-o", recs)
	if code != ExitFailure || !strings.Contains(stderr, "not reachable") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(recs); string(b) != "{\"an earlier run's records\": true}\n" {
		t.Errorf("--out after a failed preflight: %q", b)
	}
	if _, err := os.Stat(result.RunInfoPath(recs)); err != nil {
		t.Errorf("the earlier run's sidecar: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}

// A run that ends without a sidecar of its own (Ctrl-C) removes the one an
// earlier run left beside --out: summarize must not read that run's window
// and provenance as this one's.
func TestRunRemovesAStaleSidecar(t *testing.T) {
	t.Parallel() // real seconds against its own server
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 5 * time.Millisecond, TokenInterval: 5 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "spoc.yaml")
	writeFile(t, cfg, smallWorkload)
	recs := filepath.Join(dir, "r.jsonl")
	stale := "{\"window\": {\"start\": \"2020-01-01T00:00:00Z\", \"end\": \"2020-01-01T00:01:00Z\"}, \"users\": 99}\n"
	writeFile(t, result.RunInfoPath(recs), stale)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Ctrl-C once the run has written a record, however slow the machine
		for ctx.Err() == nil {
			written, _ := filepath.Glob(filepath.Join(dir, ".r.jsonl.*.tmp"))
			for _, p := range append(written, recs) {
				if st, err := os.Stat(p); err == nil && st.Size() > 0 {
					cancel()
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"run", "-c", cfg, "--target", srv.URL, "--users", "2", "--duration", "1m", "--warmup", "100ms", "--ramp", "50ms",
		"--out", recs, "--quiet"}, &stdout, &stderr)
	if code != ExitInterrupted {
		t.Fatalf("exit %d after Ctrl-C, want %d\n%s", code, ExitInterrupted, stderr.String())
	}
	if _, err := os.Stat(result.RunInfoPath(recs)); !os.IsNotExist(err) {
		b, _ := os.ReadFile(result.RunInfoPath(recs))
		t.Errorf("the earlier run's sidecar is still beside the interrupted run's records: %v %s", err, b)
	}
	code, out, errs := runLoadCLI(t, "summarize", recs, "-c", cfg)
	if code != 0 || strings.Contains(out, "source:") {
		t.Errorf("summarize of the interrupted run: exit %d\n%s%s", code, out, errs)
	}
}
