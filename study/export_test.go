package study

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
)

var update = flag.Bool("update", false, "rewrite golden files")

func exportTrials() []search.Trial {
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	return []search.Trial{
		{Number: 0, State: search.StateComplete, Params: search.Params{"max_num_seqs": 64, "gpu_memory_utilization": 0.9, "enable_chunked_prefill": true},
			Values: []float64{1234.5, 0.25}, Constraints: []float64{-0.1, 0.2}, Start: t0, Complete: t0.Add(90*time.Second + 1500*time.Microsecond),
			UserAttrs: map[string]any{"p95_ttft_s": 0.8}, SystemAttrs: map[string]any{"worker": "w1"}, Generation: 0},
		{Number: 1, State: search.StateFail, Params: search.Params{"max_num_seqs": 128, "gpu_memory_utilization": 0.95, "enable_chunked_prefill": false},
			Start: t0.Add(2 * time.Minute), Complete: t0.Add(26*time.Hour + 3*time.Minute),
			SystemAttrs: map[string]any{"worker": "w2", "fail_reason": "boom, with \"quotes\""}, Generation: 1},
		{Number: 2, State: search.StateRunning, Params: search.Params{"max_num_seqs": 32, "gpu_memory_utilization": 0.85, "enable_chunked_prefill": true},
			Start: t0.Add(3 * time.Minute), Generation: 1},
	}
}

func TestExportGolden(t *testing.T) {
	dirs := []search.Direction{search.Maximize, search.Minimize}
	for _, f := range []Format{CSV, JSON} {
		var buf bytes.Buffer
		if err := Export(&buf, f, dirs, exportTrials()); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "export."+string(f))
		if *update {
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s export differs from %s:\n%s", f, golden, buf.String())
		}
	}
}

func TestExportStructure(t *testing.T) {
	var buf bytes.Buffer
	if err := Export(&buf, CSV, []search.Direction{search.Maximize, search.Minimize}, exportTrials()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := recs[0]
	want := []string{"number", "values_0", "values_1", "datetime_start", "datetime_complete", "duration",
		"params_enable_chunked_prefill", "params_gpu_memory_utilization", "params_max_num_seqs",
		"user_attrs_p95_ttft_s", "system_attrs_fail_reason", "system_attrs_generation", "system_attrs_worker", "constraints", "state"}
	if len(header) != len(want) {
		t.Fatalf("header %v", header)
	}
	for i := range want {
		if header[i] != want[i] {
			t.Fatalf("column %d = %q, want %q", i, header[i], want[i])
		}
	}
	if len(recs) != 4 {
		t.Fatalf("%d rows", len(recs))
	}
	col := func(name string) int {
		for i, h := range header {
			if h == name {
				return i
			}
		}
		return -1
	}
	if got := recs[1][col("duration")]; got != "0 days 00:01:30.001500" {
		t.Errorf("duration %q", got)
	}
	if got := recs[2][col("duration")]; got != "1 days 02:01:00.000000" {
		t.Errorf("duration %q", got)
	}
	if got := recs[3][col("datetime_complete")]; got != "" {
		t.Errorf("running trial has completion %q", got)
	}
	// Single objective uses Optuna's "value".
	if cols := Columns([]search.Direction{search.Minimize}, nil); cols[1] != "value" {
		t.Errorf("single-objective columns %v", cols)
	}
	var js []map[string]any
	buf.Reset()
	Export(&buf, JSON, []search.Direction{search.Maximize, search.Minimize}, exportTrials())
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if js[0]["duration"] != 90.0015 || js[2]["values_0"] != nil {
		t.Errorf("json records %v", js)
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("xml accepted")
	}
}
