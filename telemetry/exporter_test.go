package telemetry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeExporter serves realistic vLLM and dcgm-exporter expositions whose
// values are functions of a tick the test advances, so every derived value
// has an exact expectation. vLLM is at /metrics, DCGM at /dcgm/metrics.
type fakeExporter struct {
	mu   sync.Mutex
	tick int
	// oldNames serves vLLM v0 names and the pre-3.3 DCGM throttle field.
	oldNames bool
	// lowerHost labels GPUs with "hostname" instead of "Hostname".
	lowerHost bool
	// throttleGPU, when ≥ 0, is the GPU thermally throttled for ticks in
	// [throttleFrom, throttleTo].
	throttleGPU              int
	throttleFrom, throttleTo int
	// gpus on the node.
	gpus int
	// live, when set, replaces the tick the test advances with one that
	// follows the wall clock.
	live func() int
}

func newFakeExporter() *fakeExporter { return &fakeExporter{throttleGPU: -1, gpus: 4} }

func (f *fakeExporter) advance() {
	f.mu.Lock()
	f.tick++
	f.mu.Unlock()
}

func (f *fakeExporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tick := f.tick
	if f.live != nil {
		tick = f.live()
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	switch r.URL.Path {
	case "/metrics":
		fmt.Fprint(w, f.vllm(tick))
	case "/dcgm/metrics":
		fmt.Fprint(w, f.dcgm(tick))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeExporter) start(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

// ttftBuckets are TTFT bucket bounds; each tick adds 5 observations in
// (0.04, 0.06], 4 in (0.08, 0.1] and 1 in (0.5, 0.75].
var ttftBuckets = []string{"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75", "1.0", "2.5", "5.0", "7.5", "10.0"}

func ttftCumulative(le string, tick int) int {
	switch le {
	case "0.001", "0.005", "0.01", "0.02", "0.04":
		return 0
	case "0.06", "0.08":
		return 5 * tick
	case "0.1", "0.25", "0.5":
		return 9 * tick
	default:
		return 10 * tick
	}
}

// itlBuckets: each tick adds 100 observations, 50 in (0.01, 0.025] and 50 in
// (0.025, 0.05].
var itlBuckets = []string{"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1.0", "2.5"}

func itlCumulative(le string, tick int) int {
	switch le {
	case "0.01":
		return 0
	case "0.025":
		return 50 * tick
	default:
		return 100 * tick
	}
}

// The gauges cycle with period 4: running 8,10,12,14 and waiting 0,0,2,6;
// KV usage 0.1,0.2,0.3,0.4. Counters: prompt 4000/tick, generation
// 500/tick, prefix queries 4000/tick of which hits 3000/tick, one preemption
// every 2 ticks, 10 requests/tick.
func (f *fakeExporter) vllm(tick int) string {
	var b strings.Builder
	lab := `engine="0",model_name="openai/gpt-oss-120b"`
	kvName, queriesName, hitsName, itlName := "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:inter_token_latency_seconds"
	if f.oldNames {
		kvName, queriesName, hitsName, itlName = "vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total", "vllm:time_per_output_token_seconds"
	}
	b.WriteString("# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter\npython_gc_objects_collected_total{generation=\"0\"} 12345.0\n")
	gauge := func(name string, v float64) {
		fmt.Fprintf(&b, "# HELP %s help text.\n# TYPE %s gauge\n%s{%s} %g\n", name, name, name, lab, v)
	}
	counter := func(name string, v float64) {
		base := strings.TrimSuffix(name, "_total")
		fmt.Fprintf(&b, "# HELP %s help text.\n# TYPE %s counter\n%s{%s} %g\n", name, name, name, lab, v)
		fmt.Fprintf(&b, "# HELP %s_created help text.\n# TYPE %s_created gauge\n%s_created{%s} 1.7645e+09\n", base, base, base, lab)
	}
	phase := tick % 4
	gauge("vllm:num_requests_running", float64(8+2*phase))
	gauge("vllm:num_requests_waiting", []float64{0, 0, 2, 6}[phase])
	gauge(kvName, 0.1*float64(phase+1))
	counter("vllm:prompt_tokens_total", float64(4000*tick))
	counter("vllm:generation_tokens_total", float64(500*tick))
	counter(queriesName, float64(4000*tick))
	counter(hitsName, float64(3000*tick))
	counter("vllm:num_preemptions_total", float64(tick/2))
	fmt.Fprintf(&b, "# HELP vllm:request_success_total Count.\n# TYPE vllm:request_success_total counter\nvllm:request_success_total{%s,finished_reason=\"stop\"} %d\nvllm:request_success_total{%s,finished_reason=\"length\"} %d\n", lab, 7*tick, lab, 3*tick)
	hist := func(name string, bounds []string, cum func(string, int) int, sum float64) {
		fmt.Fprintf(&b, "# HELP %s help.\n# TYPE %s histogram\n", name, name)
		for _, le := range bounds {
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %d\n", name, lab, le, cum(le, tick))
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, lab, cum("+Inf", tick))
		fmt.Fprintf(&b, "%s_count{%s} %d\n%s_sum{%s} %g\n", name, lab, cum("+Inf", tick), name, lab, sum)
	}
	hist("vllm:time_to_first_token_seconds", ttftBuckets, ttftCumulative, 0.9*float64(tick))
	hist(itlName, itlBuckets, itlCumulative, 2.5*float64(tick))
	// Not in the catalog: must be ignored.
	hist("vllm:request_prompt_tokens", []string{"1.0", "2.0"}, func(string, int) int { return tick }, 1)
	b.WriteString("# HELP vllm:cache_config_info Info.\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\"} 1.0\n")
	return b.String()
}

// Every GPU runs at 1980 MHz, 62 °C, 540 W, SM active 0.37, DRAM active
// 0.55, tensor active 0.12 and reports the software power cap, except the
// throttled GPU inside its throttle ticks: 1410 MHz, 91 °C, HW thermal +
// HW slowdown.
func (f *fakeExporter) dcgm(tick int) string {
	var b strings.Builder
	host := "Hostname"
	if f.lowerHost {
		host = "hostname"
	}
	reasonsName := DCGMClockReasons
	if f.oldNames {
		reasonsName = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	}
	type field struct {
		name, help string
		v          func(gpu int, throttled bool) float64
	}
	fields := []field{
		{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", func(_ int, th bool) float64 { return pick(th, 1410, 1980) }},
		{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", func(int, bool) float64 { return 2619 }},
		{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", func(_ int, th bool) float64 { return pick(th, 91, 62) }},
		{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", func(int, bool) float64 { return 540 }},
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", func(int, bool) float64 { return 100 }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func(int, bool) float64 { return 74000 }},
		{"DCGM_FI_PROF_SM_ACTIVE", "Ratio of cycles an SM has at least 1 warp assigned.", func(int, bool) float64 { return 0.37 }},
		{"DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active.", func(int, bool) float64 { return 0.55 }},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", func(int, bool) float64 { return 0.12 }},
		{reasonsName, "Current clock event reasons.", func(_ int, th bool) float64 {
			return pick(th, float64(ReasonHWThermalSlowdown|ReasonHWSlowdown), float64(ReasonSWPowerCap))
		}},
		{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", func(int, bool) float64 { return 0 }},
	}
	for _, fl := range fields {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", fl.name, fl.help, fl.name)
		for g := 0; g < f.gpus; g++ {
			th := g == f.throttleGPU && tick >= f.throttleFrom && tick <= f.throttleTo
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",%s=\"node-a\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} %g\n",
				fl.name, g, g, 0x18+g, g, host, fl.v(g, th))
		}
	}
	return b.String()
}

func pick(cond bool, a, b float64) float64 {
	if cond {
		return a
	}
	return b
}
