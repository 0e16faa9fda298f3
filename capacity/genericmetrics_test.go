package capacity_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/testharness/metricnames"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/sim/serve"
	"github.com/spoc-project/spoc/telemetry"
)

// acmeNames are the metric names of a server that is not vLLM: the
// simulator's with vllm: replaced by acme_, so that none of them is in
// telemetry's catalog.
func acmeNames() map[string]string {
	m := map[string]string{}
	for _, role := range telemetry.Roles() {
		md, _ := telemetry.RoleMetric(role)
		m[role] = strings.Replace(md.Name, "vllm:", "acme_", 1)
	}
	return m
}

// A generic server with metric names of its own: with
// engine.generic.metrics telemetry reads them into the engine signals (a
// map ignored reads nothing: none of its names is vLLM's); without it the
// run reads none of the server's metrics and says why.
func TestGenericFlavorReadsTheServersOwnMetricNames(t *testing.T) {
	testtool.Long(t, "two live runs on the simulator over HTTP: about 9 s")
	t.Parallel()
	dep, err := sim.NewDeployment(config.Default().Engine.SimDeployment())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{Deployment: dep, TimeScale: 100, Tokenizer: config.Default().Workload.Tokenizer})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(metricnames.Rename(srv.Handler(), "/metrics", "vllm:", "acme_"))
	defer srv.Close()
	defer ts.Close()
	var metricsYAML strings.Builder
	for role, name := range acmeNames() {
		fmt.Fprintf(&metricsYAML, "      %s: %q\n", role, name)
	}
	for _, tc := range []struct {
		name, metrics string
	}{{"mapped", "    metrics:\n" + metricsYAML.String()}, {"none", ""}} {
		text := fmt.Sprintf(`engine:
  kind: external
  flavor: generic
  served_model_name: %s
  external:
    url: %s
    metrics_urls: [%s/metrics]
  generic:
%s    reset_path: /reset_prefix_cache
workload:
  profiles:
    - name: P0
      weight: 1
      context_start: {kind: lognormal, median: 1500, sigma: 0.2, min: 800, max: 3000}
      max_context: 8000
      growth: {kind: lognormal, median: 200, sigma: 0.3, min: 50, max: 600}
      output_tokens: {kind: lognormal, median: 60, sigma: 0.2, min: 30, max: 100}
      think_time_s: {kind: constant, value: 0.1}
      at_max: new-session
  geometry: {kind: none}
telemetry:
  interval: 200ms
`, srv.Model(), ts.URL, ts.URL, tc.metrics)
		cfg, err := config.Load(strings.NewReader(text), tc.name+".yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		setup, err := cfg.Setup(config.SetupOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := capacity.NewEvaluator(setup.Setup, nil)
		if err != nil {
			t.Fatal(err)
		}
		load := capacity.Load{Users: 4, Warmup: time.Second, Duration: 2 * time.Second, ThinkTimeScale: 0.01}
		got, err := ev.Evaluate(context.Background(), nil, load, capacity.Outputs{})
		ev.Close(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Summary.Overall.OK == 0 {
			t.Fatalf("%s: no request served: %+v", tc.name, got.Summary.Overall)
		}
		switch tc.name {
		case "mapped":
			if got.Signals == nil {
				t.Fatal("mapped: no telemetry joined to the run")
			}
			e := got.Signals.Engine
			if e.Running.Samples == 0 || e.KVCacheUsage.Samples == 0 || e.PromptTokens <= 0 || e.PrefixCacheQueries <= 0 || e.TTFT.Count <= 0 {
				t.Errorf("mapped: the server's own names were not read: running %+v, kv %+v, prompt tokens %v, prefix queries %v, TTFT %+v; gaps %+v",
					e.Running, e.KVCacheUsage, e.PromptTokens, e.PrefixCacheQueries, e.TTFT, got.Signals.Gaps)
			}
			if got.NoServerMetrics != "" {
				t.Errorf("mapped: %q", got.NoServerMetrics)
			}
		case "none":
			if got.NoServerMetrics != engine.NoGenericMetrics {
				t.Errorf("none: NoServerMetrics = %q, want %q", got.NoServerMetrics, engine.NoGenericMetrics)
			}
			if got.Signals != nil && got.Signals.Engine.Running.Samples > 0 {
				t.Errorf("none: the server's metrics were read: %+v", got.Signals.Engine)
			}
		}
	}
}
