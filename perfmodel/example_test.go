package perfmodel_test

import (
	"fmt"

	"github.com/spoc-project/spoc/perfmodel"
)

// A step of 64 decodes at 4k context plus a 2048-token prefill chunk, for
// gpt-oss-120b on 4×H100 with the built-in (calibrated) factors.
func ExampleSystem_Step() {
	m, _ := perfmodel.LookupModel("gpt-oss-120b")
	g, _ := perfmodel.LookupGPU("h100")
	s, err := perfmodel.NewSystem(m, g, perfmodel.SystemOptions{TensorParallel: 4, CUDAGraphs: true})
	if err != nil {
		panic(err)
	}
	batch := make([]perfmodel.Seq, 65)
	for i := range batch {
		batch[i] = perfmodel.Seq{NewTokens: 1, ContextTokens: 4096}
	}
	batch[64] = perfmodel.Seq{NewTokens: 2048}
	c := s.Step(batch)
	fmt.Printf("expert format %v, step %.1f ms, bottleneck %s\n", s.ExpertFormat(), c.Seconds*1e3, c.Bottleneck())
	kv, _ := s.KVCacheTokens(0.9)
	fmt.Printf("KV cache: %d tokens of %.0f bytes\n", kv, s.KVBytesPerToken())
	// Output:
	// expert format w4a16, step 36.2 ms, bottleneck moe/compute
	// KV cache: 6357616 tokens of 36864 bytes
}
