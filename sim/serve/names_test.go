package serve

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/vllm"
)

// TestMetricNamesAreVLLMs holds the exporter to package vllm: every series
// on /metrics has a name vllm declares, and every vLLM metric telemetry
// derives signals from is exported, so the simulator and the reader of a
// real server cannot drift apart.
func TestMetricNamesAreVLLMs(t *testing.T) {
	s, _ := newTestServer(t, nil)
	families, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := vllm.MetricNames()
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
		if !slices.Contains(known, f.GetName()) {
			t.Errorf("/metrics exports %q, which is not a name in package vllm", f.GetName())
		}
	}
	for _, m := range telemetry.Catalog() {
		if m.Source == telemetry.SourceVLLM && !exported[m.Name] {
			t.Errorf("telemetry reads %q, which the simulator does not export", m.Name)
		}
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == vllm.LabelModelName && l.GetValue() != s.Model() {
					t.Errorf("%s: %s=%q, want the served name %q", f.GetName(), vllm.LabelModelName, l.GetValue(), s.Model())
				}
			}
		}
	}
}

func TestServerVersion(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"", "spoc-sim dev"},
		{"v1.2.3", "spoc-sim v1.2.3"},
	} {
		_, ts := newTestServer(t, func(c *Config) { c.Version = tc.version })
		var v struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal([]byte(get(t, ts.URL+vllm.PathVersion)), &v); err != nil || v.Version != tc.want {
			t.Errorf("Version %q: /version says %q (%v), want %q", tc.version, v.Version, err, tc.want)
		}
	}
}

// TestServerResetPrefixCache checks that POST /reset_prefix_cache answers
// 200 and that an identical request afterwards finds nothing cached.
func TestServerResetPrefixCache(t *testing.T) {
	_, ts := newTestServer(t, nil)
	long := strings.Repeat("The shared monorepo root file contents go here. ", 100)
	body := `{"messages":[{"role":"system","content":` + quote(long) + `},{"role":"user","content":"hi"}],` +
		`"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	streamChat(t, ts.URL, body)
	if b := streamChat(t, ts.URL, body); b.cached == 0 {
		t.Fatal("identical second request cached nothing; the test needs a warm cache")
	}
	resp, err := http.Post(ts.URL+vllm.PathResetPrefixCache, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d, want 200", vllm.PathResetPrefixCache, resp.StatusCode)
	}
	if c := streamChat(t, ts.URL, body); c.cached != 0 {
		t.Errorf("after reset an identical request cached %d tokens, want 0", c.cached)
	}
	if resp, err := http.Get(ts.URL + vllm.PathResetPrefixCache); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: status %d, want 405 (vLLM's route is POST)", vllm.PathResetPrefixCache, resp.StatusCode)
		}
	}
}
