package serve

import (
	"slices"
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
