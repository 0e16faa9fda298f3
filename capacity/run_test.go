package capacity_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
)

// runSetup resolves the reference workload against the external server at
// url with a short run window.
func runSetup(t *testing.T, url string, duration time.Duration) capacity.Setup {
	t.Helper()
	cfg := config.Default()
	cfg.Run.Target = url
	if err := cfg.UseRunTarget(); err != nil {
		t.Fatal(err)
	}
	cfg.Run.Users, cfg.Run.Ramp, cfg.Run.Warmup, cfg.Run.Duration = 2, 0, config.Duration(200*time.Millisecond), config.Duration(duration)
	cfg.Run.ThinkTimeScale = 0.001
	cfg.Telemetry.Enabled = false
	s, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Setup
}

// staleRun writes records and a sidecar as an earlier run left them.
func staleRun(t *testing.T, dir string) (records string) {
	t.Helper()
	records = filepath.Join(dir, "r.jsonl")
	if err := os.WriteFile(records, []byte("{\"earlier\": true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := result.RunInfo{Window: result.Window{Start: time.Unix(1e9, 0), End: time.Unix(1e9+60, 0)}, Users: 99}
	var b bytes.Buffer
	if err := result.WriteRunInfo(&b, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(result.RunInfoPath(records), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return records
}

// onlyFiles fails unless dir holds exactly the named files: no temporary
// file is left behind.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %q, want %q", dir, got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("%s holds %q, want %q", dir, got, names)
		}
	}
}

// A run whose preflight fails writes no record: the records file and the
// sidecar an earlier run left stay exactly as they were.
func TestRunFailedPreflightLeavesThePreviousRecords(t *testing.T) {
	srv := testserver.Start(testserver.Config{})
	url := srv.URL
	srv.Close() // nothing listens there any more
	dir := t.TempDir()
	records := staleRun(t, dir)
	before, _ := os.ReadFile(records)
	sidecar, _ := os.ReadFile(result.RunInfoPath(records))
	if _, err := capacity.Run(context.Background(), runSetup(t, url, time.Second), capacity.RunOptions{Records: records}); err == nil {
		t.Fatal("a run against nothing succeeded")
	}
	if got, _ := os.ReadFile(records); !bytes.Equal(got, before) {
		t.Errorf("records changed to %q", got)
	}
	if got, _ := os.ReadFile(result.RunInfoPath(records)); !bytes.Equal(got, sidecar) {
		t.Errorf("sidecar changed to %q", got)
	}
	onlyFiles(t, dir, "r.jsonl", "r.jsonl.run.json")
}

// Records into a folder that does not exist: an error naming the folder
// before the run, and nothing created.
func TestRunRecordsInAMissingFolder(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: time.Millisecond, TokenInterval: time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	records := filepath.Join(dir, "no-such", "r.jsonl")
	_, err := capacity.Run(context.Background(), runSetup(t, srv.URL, 500*time.Millisecond), capacity.RunOptions{Records: records})
	if err == nil || !strings.Contains(err.Error(), "the folder "+filepath.Join(dir, "no-such")+" does not exist") {
		t.Fatalf("records in a missing folder: %v", err)
	}
	onlyFiles(t, dir)
}

// A completed run replaces the records and the sidecar: summarize then
// reads this run's window, never the earlier one's.
func TestRunReplacesRecordsAndSidecar(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: time.Millisecond, TokenInterval: time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	records := staleRun(t, dir)
	res, err := capacity.Run(context.Background(), runSetup(t, srv.URL, 500*time.Millisecond), capacity.RunOptions{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	info := readRunInfo(t, records)
	if info.Users != 2 || !info.Window.Start.Equal(res.Summary.Window.Start) || !info.Window.End.Equal(res.Summary.Window.End) {
		t.Errorf("sidecar %+v, run window %+v", info, res.Summary.Window)
	}
	if n := countRecords(t, records); n == 0 || int64(n) < res.Summary.Overall.Requests {
		t.Errorf("%d records for %d measured requests", n, res.Summary.Overall.Requests)
	}
	onlyFiles(t, dir, "r.jsonl", "r.jsonl.run.json")
}

// Ctrl-C keeps what was measured, readable under the records path, and
// removes the earlier run's sidecar: its window is not this run's.
func TestRunInterruptedKeepsRecordsAndDropsTheStaleSidecar(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: time.Millisecond, TokenInterval: 5 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	records := staleRun(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go cancelOnceRecorded(ctx, cancel, dir)
	res, err := capacity.Run(ctx, runSetup(t, srv.URL, time.Minute), capacity.RunOptions{Records: records})
	if !errors.Is(err, context.Canceled) || res == nil || !res.Interrupted || !res.Kept {
		t.Fatalf("Run after Ctrl-C = %+v, %v; want the partial run, its records kept, and context.Canceled", res, err)
	}
	if b, _ := os.ReadFile(records); bytes.Contains(b, []byte("earlier")) || countRecords(t, records) == 0 {
		t.Errorf("the records after Ctrl-C are not this run's: %.200s", b)
	}
	onlyFiles(t, dir, "r.jsonl")
}

// A simulated run goes through the same lifecycle: its sidecar's window is
// the virtual one its records carry, so summarize of the file states the
// run's own summary; a path that is no regular file is written in place,
// without one.
func TestRunVirtualWritesTheSameSidecar(t *testing.T) {
	s := quickSetup(t)
	dir := t.TempDir()
	records := staleRun(t, dir)
	res, err := capacity.Run(context.Background(), s, capacity.RunOptions{Records: records})
	if err != nil {
		t.Fatal(err)
	}
	info := readRunInfo(t, records)
	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := result.NewSummary(s.SLA, info.Window, result.WithClientBoundLag(s.Client.ClientBoundLagP99), result.WithPromptDriftLimit(s.Client.PromptDriftLimit))
	if _, err := result.ReadAll(f, records, sum.Write); err != nil {
		t.Fatal(err)
	}
	again := sum.Result().Overall
	if want := res.Summary.Overall; again.Requests != want.Requests || again.OutputTokensPerSecond != want.OutputTokensPerSecond {
		t.Errorf("from the file: %d requests, %.1f tok/s; the run: %d, %.1f", again.Requests, again.OutputTokensPerSecond, want.Requests, want.OutputTokensPerSecond)
	}
	res, err = capacity.Run(context.Background(), s, capacity.RunOptions{Records: os.DevNull})
	if err != nil || res.NoRunInfo == "" {
		t.Errorf("records to %s: %v, no-sidecar reason %q", os.DevNull, err, res.NoRunInfo)
	}
}

func readRunInfo(t *testing.T, records string) result.RunInfo {
	t.Helper()
	f, err := os.Open(result.RunInfoPath(records))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := result.ReadRunInfo(f, result.RunInfoPath(records))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func countRecords(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	if _, err := result.ReadAll(f, path, func(*result.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// cancelOnceRecorded cancels (Ctrl-C) once the run's temporary records
// file in dir holds a record, however slow the machine.
func cancelOnceRecorded(ctx context.Context, cancel context.CancelFunc, dir string) {
	for ctx.Err() == nil {
		tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
		for _, tmp := range tmps {
			if st, err := os.Stat(tmp); err == nil && st.Size() > 0 {
				cancel()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
