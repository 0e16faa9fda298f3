package telemetry

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name, canonical, suffix string
		alias, ok               bool
	}{
		{"vllm:num_requests_running", VLLMRunning, "", false, true},
		{"vllm:gpu_cache_usage_perc", VLLMKVCacheUsage, "", true, true},
		{"vllm:kv_cache_usage_perc", VLLMKVCacheUsage, "", false, true},
		{"vllm:prompt_tokens_total", VLLMPromptTokens, "", false, true},
		{"vllm:prompt_tokens", VLLMPromptTokens, "", false, true}, // OpenMetrics family name
		{"vllm:gpu_prefix_cache_hits_total", VLLMPrefixHits, "", true, true},
		{"vllm:gpu_prefix_cache_queries", VLLMPrefixQueries, "", true, true},
		{"vllm:time_per_output_token_seconds_bucket", VLLMITL, "_bucket", true, true},
		{"vllm:inter_token_latency_seconds_sum", VLLMITL, "_sum", false, true},
		{"vllm:time_to_first_token_seconds_count", VLLMTTFT, "_count", false, true},
		{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", DCGMClockReasons, "", true, true},
		{"DCGM_FI_PROF_SM_ACTIVE", DCGMSMActive, "", false, true},
		{"vllm:request_prompt_tokens_bucket", "", "", false, false},
		{"vllm:num_requests_running_total", "", "", false, false},
		{"", "", "", false, false},
	} {
		m, suffix, alias, ok := Lookup(tc.name)
		if ok != tc.ok || m.Name != tc.canonical || suffix != tc.suffix || alias != tc.alias {
			t.Errorf("Lookup(%q) = %q %q alias=%v ok=%v, want %q %q alias=%v ok=%v", tc.name, m.Name, suffix, alias, ok, tc.canonical, tc.suffix, tc.alias, tc.ok)
		}
	}
}

func TestCatalogIsACopy(t *testing.T) {
	c := Catalog()
	c[0].Name = "changed"
	c[0].Aliases = append(c[0].Aliases, "x")
	if Catalog()[0].Name == "changed" {
		t.Fatal("Catalog exposes the package's table")
	}
	if !sort.SliceIsSorted(c[1:], func(i, j int) bool { return c[1+i].Name < c[1+j].Name }) {
		t.Error("Catalog not sorted")
	}
}

func names(samples []Sample) map[string]int {
	m := make(map[string]int)
	for _, s := range samples {
		m[s.Name]++
	}
	return m
}

func TestParseRealisticExposition(t *testing.T) {
	exp := newFakeExporter()
	samples, err := Parse(strings.NewReader(exp.vllm(3)), TextFormat)
	if err != nil {
		t.Fatal(err)
	}
	got := names(samples)
	for name, n := range map[string]int{
		"vllm:num_requests_running":               1,
		"vllm:prompt_tokens_total":                1,
		"vllm:request_success_total":              2,
		"vllm:time_to_first_token_seconds_bucket": len(ttftBuckets) + 1,
		"vllm:time_to_first_token_seconds_count":  1,
		"vllm:time_to_first_token_seconds_sum":    1,
	} {
		if got[name] != n {
			t.Errorf("%s: %d samples, want %d", name, got[name], n)
		}
	}
	for _, absent := range []string{"python_gc_objects_collected_total", "vllm:request_prompt_tokens_bucket", "vllm:cache_config_info", "vllm:prompt_tokens_created"} {
		if got[absent] != 0 {
			t.Errorf("%s kept; only catalog metrics should be", absent)
		}
	}
	for _, s := range samples {
		if s.Name == "vllm:time_to_first_token_seconds_bucket" && s.Labels["le"] == "+Inf" && s.Value != 30 {
			t.Errorf("+Inf bucket = %v, want 30", s.Value)
		}
		if s.Labels["model_name"] != "openai/gpt-oss-120b" {
			t.Errorf("%s lost its labels: %v", s.Name, s.Labels)
		}
	}
	dcgm, err := Parse(strings.NewReader(exp.dcgm(0)), TextFormat)
	if err != nil {
		t.Fatal(err)
	}
	if n := names(dcgm)[DCGMSMClock]; n != 4 {
		t.Errorf("SM clock samples = %d, want 4", n)
	}
	if n := names(dcgm)["DCGM_FI_DEV_XID_ERRORS"]; n != 0 {
		t.Errorf("XID errors kept (not in the catalog)")
	}
}

func TestParsePrefersCurrentNames(t *testing.T) {
	in := `# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0"} 0.4
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0"} 0.4
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{engine="0"} 7
`
	samples, err := Parse(strings.NewReader(in), TextFormat)
	if err != nil {
		t.Fatal(err)
	}
	got := names(samples)
	if got["vllm:gpu_cache_usage_perc"] != 0 || got["vllm:kv_cache_usage_perc"] != 1 {
		t.Errorf("both KV names kept: %v", got)
	}
	if got["vllm:gpu_prefix_cache_hits_total"] != 1 {
		t.Errorf("an old name without its current twin must be kept: %v", got)
	}
}

func TestParseUntypedHistogramAndSpecialValues(t *testing.T) {
	in := `vllm:time_to_first_token_seconds_bucket{le="0.1"} 3
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 4
vllm:time_to_first_token_seconds_count 4
vllm:num_requests_running NaN
vllm:num_requests_waiting +Inf
vllm:kv_cache_usage_perc 0.5 1700000000000
`
	samples, err := Parse(strings.NewReader(in), TextFormat)
	if err != nil {
		t.Fatal(err)
	}
	got := names(samples)
	if got["vllm:time_to_first_token_seconds_bucket"] != 2 || got["vllm:time_to_first_token_seconds_count"] != 1 {
		t.Errorf("untyped histogram series: %v", got)
	}
	if got[VLLMRunning] != 0 || got[VLLMWaiting] != 0 {
		t.Errorf("non-finite values kept: %v", got)
	}
	if got[VLLMKVCacheUsage] != 1 {
		t.Errorf("sample with exposition timestamp dropped: %v", got)
	}
}

// TestParseOpenMetrics covers servers that answer OpenMetrics although spoc
// asks for text. expfmt's OpenMetrics parser is slow (an ABNF grammar per
// line), which is why the scraper never asks for it.
func TestParseOpenMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("OpenMetrics grammar setup takes seconds")
	}
	in := `# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0"} 42.0
vllm:prompt_tokens_created{engine="0"} 1.7e9
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.5"} 1
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 2
vllm:time_to_first_token_seconds_count 2
vllm:time_to_first_token_seconds_sum 1.5
# EOF
`
	samples, err := Parse(strings.NewReader(in), expfmt.NewFormat(expfmt.TypeOpenMetrics))
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(StoreOptions{})
	st.Add("x", t0, samples)
	var gotNames []string
	for _, s := range st.Series() {
		gotNames = append(gotNames, s.Name)
	}
	sort.Strings(gotNames)
	want := "vllm:prompt_tokens_total vllm:time_to_first_token_seconds_bucket vllm:time_to_first_token_seconds_bucket vllm:time_to_first_token_seconds_count vllm:time_to_first_token_seconds_sum"
	if strings.Join(gotNames, " ") != want {
		t.Errorf("stored series = %v\nwant %s", gotNames, want)
	}
}

func TestParseSkipsOtherMetricsBeforeParsing(t *testing.T) {
	// A broken line of a metric spoc does not read does not cost the scrape.
	in := "# HELP python_info Info.\n# TYPE python_info gauge\npython_info{version=\"3.12\" 1\nvllm:num_requests_running 4\n"
	samples, err := Parse(strings.NewReader(in), TextFormat)
	if err != nil || len(samples) != 1 || samples[0].Value != 4 {
		t.Errorf("Parse = %+v, %v; want the one catalog sample", samples, err)
	}
	if got := string(keepCatalogLines([]byte("a 1\n# plain comment\n\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 2"), byName)); got != "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 2" {
		t.Errorf("keepCatalogLines = %q", got)
	}
}

func TestScrapeWithoutCatalogMetricsIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("node_load1 0.5\n"))
	}))
	defer srv.Close()
	h := &HTTPScraper{Target: Target{Name: "node", URL: srv.URL}}
	if _, err := h.Scrape(context.Background()); !errors.Is(err, ErrNoCatalogMetrics) || !strings.Contains(err.Error(), `"node"`) {
		t.Errorf("err = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"vllm:num_requests_running{engine=\"0\" 3\n",
		"vllm:num_requests_running 3 4 5\n",
		"# TYPE vllm:num_requests_running gauge\n# TYPE vllm:num_requests_running counter\n",
		"vllm:num_requests_running{engine=\"0\"} abc\n",
		"<html><body>502 Bad Gateway</body></html>\n",
		"vllm:num_requests_running 1\n{{{\n",
	} {
		if _, err := Parse(strings.NewReader(in), TextFormat); err == nil {
			t.Errorf("Parse(%q) accepted malformed input", in)
		}
	}
	big := bytes.Repeat([]byte("# comment line padding the exposition beyond its limit\n"), 100)
	if _, err := parse(bytes.NewReader(big), TextFormat, 1000, byName); !errors.Is(err, ErrExpositionTooLarge) {
		t.Errorf("oversized exposition: err = %v", err)
	}
}

// FuzzParse feeds arbitrary expositions through Parse and into a Store: no
// panic, and everything kept is a finite catalog sample.
func FuzzParse(f *testing.F) {
	// Small seeds: the fuzzer minimises every input that finds new coverage,
	// and minimising a whole exposition takes minutes.
	f.Add("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3\n# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 10\n")
	f.Add("# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 1\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\nvllm:time_to_first_token_seconds_sum 0.3\nvllm:time_to_first_token_seconds_count 2\n")
	f.Add("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"n\"} 1980\nDCGM_FI_DEV_SM_CLOCK{gpu=\"1\",Hostname=\"n\"} 1400\nDCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"1\",Hostname=\"n\"} 64\n")
	f.Add("vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 3\n")
	f.Add("# TYPE x histogram\nx_bucket{le=\"NaN\"} 1\n")
	f.Add("vllm:num_requests_running{a=\"\\n\\\"\"} -0\n")
	f.Fuzz(func(t *testing.T, in string) {
		samples, err := Parse(strings.NewReader(in), TextFormat)
		if err != nil {
			return
		}
		for _, s := range samples {
			if _, ok := CanonicalSeriesName(s.Name); !ok {
				t.Fatalf("non-catalog sample %q kept", s.Name)
			}
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				t.Fatalf("non-finite value kept: %+v", s)
			}
		}
		st := NewStore(StoreOptions{MaxPoints: 4, MaxSeries: 64})
		st.Add("fuzz", t0, samples)
		_ = st.Window(t0, t0.Add(time.Second), DeriveOptions{})
	})
}
