package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoc-project/spoc/telemetry"
)

// telemetryExporter serves a tiny vLLM exposition whose prompt-token counter
// grows by 100 per scrape, and two GPUs, one of them thermally throttled.
func telemetryExporter(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/dcgm") {
			fmt.Fprint(w, "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"+
				"DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"n\"} 1980\nDCGM_FI_DEV_SM_CLOCK{gpu=\"1\",Hostname=\"n\"} 1200\n"+
				"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu=\"0\",Hostname=\"n\"} 0\nDCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu=\"1\",Hostname=\"n\"} 64\n")
			return
		}
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"+
			"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total %d\n", 100*n.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTelemetryScrape(t *testing.T) {
	srv := telemetryExporter(t)
	out := filepath.Join(t.TempDir(), "telemetry.jsonl")
	code, stdout, stderr := runCLI(t, "telemetry", "scrape",
		"--target", "vllm="+srv.URL+"/metrics", "--target", "dcgm="+srv.URL+"/dcgm/metrics",
		"--duration", "350ms", "--interval", "100ms", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sig telemetry.Signals
	if err := json.Unmarshal([]byte(stdout), &sig); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if sig.Engine.Running.Max != 3 || sig.Engine.PromptTokens < 100 {
		t.Errorf("engine signals %+v", sig.Engine)
	}
	if len(sig.Stragglers) != 1 || sig.Stragglers[0].GPU != "1" {
		t.Errorf("stragglers %+v, want GPU 1", sig.Stragglers)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := telemetry.ReadJSONL(f, telemetry.StoreOptions{})
	if err != nil {
		t.Fatalf("telemetry.jsonl: %v", err)
	}
	if len(st.Series()) != 6 { // running, prompt tokens, 2 × (SM clock, reasons)
		t.Errorf("telemetry.jsonl holds %d series, want 6", len(st.Series()))
	}
	if fi, err := os.Stat(out); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o644 {
		t.Errorf("telemetry.jsonl mode %v, want 0644 like os.Create", fi.Mode())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Text output names the straggler; a dead target is a gap, not a failure.
	code, stdout, stderr = runCLI(t, "telemetry", "scrape", "--target", "dcgm="+srv.URL+"/dcgm/metrics",
		"--target", "gone=http://127.0.0.1:1/metrics", "--duration", "250ms", "--interval", "100ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"straggler n/gpu1", "hw_thermal_slowdown", `gap in "gone"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout)
		}
	}
}

// A scrape in which no target ever answered measured nothing: exit 1 naming
// the failure, after printing the gaps.
func TestTelemetryScrapeNothingAnswered(t *testing.T) {
	code, stdout, stderr := runCLI(t, "telemetry", "scrape", "--target", "gone=http://127.0.0.1:1/metrics",
		"--duration", "250ms", "--interval", "100ms")
	if code != ExitFailure || !strings.Contains(stderr, "no target answered") || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q; want exit 1 saying no target answered", code, stderr)
	}
	if !strings.Contains(stdout, `gap in "gone"`) {
		t.Errorf("gaps not printed:\n%s", stdout)
	}
}

func TestTelemetryUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"telemetry", "scrape", "--duration", "1s"}, "at least one --target"},
		{[]string{"telemetry", "scrape", "--target", "x", "--duration", "1s"}, "want NAME=URL"},
		{[]string{"telemetry", "scrape", "--target", "a=http://h/m"}, "--duration must be positive"},
		{[]string{"telemetry", "scrape", "--target", "a=http://h/m", "--duration", "1s", "--clock-drop", "1.5"}, "--clock-drop"},
		{[]string{"telemetry", "query", "--start", "-5m"}, "--prometheus"},
		{[]string{"telemetry", "query", "--prometheus", "http://p", "--start", "yesterday"}, "--start \"yesterday\""},
		{[]string{"telemetry", "query", "--prometheus", "http://p", "--start", "now", "--end", "-1m"}, "must be after --start"},
		{[]string{"telemetry", "query", "--prometheus", "http://p", "--start", "-1m", "--query", "nosuch=up"}, "not a catalog metric"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestTelemetryQuery(t *testing.T) {
	var queries atomic.Int64
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Add(1)
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		result := "[]"
		if r.Form.Get("query") == `vllm:num_requests_running{job="x"}` {
			result = `[{"metric":{"__name__":"vllm:num_requests_running","job":"x"},"values":[[1764475200,"2"],[1764475201,"6"]]}]`
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":%s}}`, result)
	}))
	defer prom.Close()
	start := time.Unix(1764475200, 0).UTC()
	code, stdout, stderr := runCLI(t, "telemetry", "query", "--prometheus", prom.URL, "--selector", `job="x"`,
		"--start", start.Format(time.RFC3339), "--end", "1764475202", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sig telemetry.Signals
	if err := json.Unmarshal([]byte(stdout), &sig); err != nil {
		t.Fatal(err)
	}
	if sig.Engine.Running.Mean != 4 || sig.Engine.Running.Max != 6 {
		t.Errorf("running %+v, want mean 4 max 6", sig.Engine.Running)
	}
	if int(queries.Load()) != len(telemetry.Catalog()) {
		t.Errorf("%d queries, want one per catalog metric", queries.Load())
	}
}

func TestParseTimeFlag(t *testing.T) {
	now := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"now":                  now,
		"-15m":                 now.Add(-15 * time.Minute),
		"2026-11-30T04:00:00Z": time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC),
		"1764475200.5":         time.Unix(1764475200, 5e8).UTC(),
	} {
		got, err := parseTimeFlag("--start", in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseTimeFlag(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
