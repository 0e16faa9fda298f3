package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A runs.json that is missing, malformed or lists an unusable run is an
// error naming the file (and the run), never an empty fit.
func TestReadManifestRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := readManifest(dir); err == nil || !strings.Contains(err.Error(), "a multi plan's output folder has one") {
		t.Errorf("missing manifest: %v", err)
	}
	for _, tc := range []struct{ body, want string }{
		{`[]`, "lists no run"},
		{`[{"records": "probes/probe-1.jsonl", "users": 8, "duration_seconds": 5, "repeats": 2}]`, `unknown field "repeats"`},
		{`[{"records": "probes/probe-1.jsonl", "users": 0, "duration_seconds": 5}]`, "run 1: needs records, users ≥ 1"},
		{`[{"records": "", "users": 4, "duration_seconds": 5}]`, "run 1: needs records"},
		{`{"records": "x"}`, "cannot unmarshal"},
		{`[{"records": "probes/probe-1.jsonl", "users": 8, "duration_seconds": 5}]`, "run 1: needs its measured window"},
		{`[{"records": "probes/probe-1.jsonl", "users": 8, "duration_seconds": 5, "window_start": "2026-12-01T10:00:05Z", "window_end": "2026-12-01T10:00:05Z"}]`, "run 1: needs its measured window"},
	} {
		if err := os.WriteFile(filepath.Join(dir, RunsManifest), []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readManifest(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), RunsManifest) {
			t.Errorf("%s: err %v, want %q naming %s", tc.body, err, tc.want, RunsManifest)
		}
	}
	good := `[{"records": "probes/probe-1.jsonl", "params": {}, "users": 8, "ramp_seconds": 1, "warmup_seconds": 2, "duration_seconds": 5, "think_time_scale": 1, "window_start": "2026-12-01T10:00:02Z", "window_end": "2026-12-01T10:00:07Z", "held_back": true}]`
	if err := os.WriteFile(filepath.Join(dir, RunsManifest), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := readManifest(dir)
	if err != nil || len(runs) != 1 || !runs[0].HeldBack || runs[0].Users != 8 {
		t.Errorf("good manifest: %+v, %v", runs, err)
	}
}
