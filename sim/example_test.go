package sim_test

import (
	"fmt"

	"github.com/spoc-project/spoc/sim"
)

// The tune loop passes sampled engine flags by their vLLM names.
func ExampleParamsFromMap() {
	p, err := sim.ParamsFromMap(map[string]any{
		"max-num-batched-tokens":   2048,
		"no-enable-prefix-caching": true,
		"gpu_memory_utilization":   "0.85",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.MaxNumBatchedTokens, p.EnablePrefixCaching, p.GPUMemoryUtilization, p.MaxNumSeqs)
	_, err = sim.ParamsFromMap(map[string]any{"max-num-seqs": 0})
	fmt.Println(err)
	// Output:
	// 2048 false 0.85 256
	// engine params: max-num-seqs must be at least 1, got 0
}
