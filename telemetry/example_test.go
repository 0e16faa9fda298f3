package telemetry_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spoc-project/spoc/telemetry"
)

// Signals can be derived from any source of samples: here two scrapes of a
// vLLM server and of a two-GPU node whose GPU 1 is thermally throttled.
func ExampleWriteText() {
	st := telemetry.NewStore(telemetry.StoreOptions{})
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		vllm := fmt.Sprintf(`vllm:num_requests_running %d
vllm:num_requests_waiting 0
vllm:kv_cache_usage_perc 0.1
vllm:prefix_cache_queries_total %d
vllm:prefix_cache_hits_total %d
vllm:time_to_first_token_seconds_bucket{le="0.1"} %d
vllm:time_to_first_token_seconds_bucket{le="1"} %d
vllm:time_to_first_token_seconds_bucket{le="+Inf"} %d
`, 10+i, 1000*i, 900*i, 8*i, 10*i, 10*i)
		dcgm := `DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-a"} 1980
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-a"} 1410
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-a"} 61
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="node-a"} 92
DCGM_FI_PROF_SM_ACTIVE{gpu="0",Hostname="node-a"} 0.37
DCGM_FI_PROF_SM_ACTIVE{gpu="1",Hostname="node-a"} 0.37
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="0",Hostname="node-a"} 4
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="1",Hostname="node-a"} 72
`
		for target, text := range map[string]string{"vllm": vllm, "dcgm": dcgm} {
			samples, err := telemetry.Parse(strings.NewReader(text), telemetry.TextFormat)
			if err != nil {
				panic(err)
			}
			st.Add(target, at, samples)
		}
	}
	sig := st.Window(t0, t0.Add(2*time.Second), telemetry.DeriveOptions{})
	if err := telemetry.WriteText(os.Stdout, sig); err != nil {
		panic(err)
	}
	// Output:
	// window                 2026-11-30T04:00:00Z – 2026-11-30T04:00:02Z (2s)
	// requests running       mean 11.0   max 12
	// requests waiting       mean 0.0    max 0
	// KV-cache usage         p50 10.0 %  max 10.0 %
	// prefix-cache hit rate  90.0 %      (1800 of 2000 tokens)
	// preemptions            0
	// tokens                 prompt 0   generated 0
	// server TTFT            p50 62 ms  p90 550 ms  p99 955 ms  (n=20)
	//
	// GPU          SM active  DRAM active  tensor active  SM MHz (min)  temp °C (max)  power W  throttle
	// node-a/gpu0  37.0 %     0.0 %        0.0 %          1980 (1980)   61 (61)        0        sw_power_cap
	// node-a/gpu1  37.0 %     0.0 %        0.0 %          1410 (1410)   92 (92)        0        hw_slowdown,hw_thermal_slowdown
	//
	// straggler node-a/gpu1: 2026-11-30T04:00:00Z – 2026-11-30T04:00:02Z (3 samples): sm_clock_below_peers, hw_slowdown, hw_thermal_slowdown; SM clock 1410 MHz vs peers' median 1980 MHz
}
