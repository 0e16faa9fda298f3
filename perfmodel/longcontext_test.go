package perfmodel_test

import (
	"fmt"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

// prefill prices one prompt of n tokens prefilled alone in chunks of chunk
// tokens (vLLM's chunked prefill with max-num-batched-tokens = chunk) and
// returns the summed terms and the full- and sliding-layer pair counts.
func prefill(s *perfmodel.System, n, chunk int) (perfmodel.Terms, perfmodel.BatchShape) {
	var t perfmodel.Terms
	var all perfmodel.BatchShape
	w := s.Model().SlidingWindow
	for done := 0; done < n; done += chunk {
		q := perfmodel.Seq{NewTokens: min(chunk, n-done), ContextTokens: done}
		var b perfmodel.BatchShape
		b.Add(q, w)
		all.Add(q, w)
		t = t.Plus(s.StepShape(b).Terms)
	}
	return t, all
}

// TestLongContextPrefillScaling checks the prefill cost of 16k–128k-token
// prompts against the attention FLOP count of FlashAttention-2 (Dao 2023,
// arXiv:2307.08691, §3.3: 4·N²·d·heads per layer, halved by the causal
// mask): chunked prefill computes exactly N(N+1)/2 query-key pairs per
// full-attention head, however the prompt is chunked, while gpt-oss's
// sliding-window layers (window 128) compute at most 128 per query — linear in N.
func TestLongContextPrefillScaling(t *testing.T) {
	m, _ := perfmodel.LookupModel("gpt-oss-120b")
	g, _ := perfmodel.LookupGPU("h100")
	s, err := perfmodel.NewSystem(m, g, perfmodel.SystemOptions{TensorParallel: 4, CUDAGraphs: true})
	if err != nil {
		t.Fatal(err)
	}
	w := m.SlidingWindow
	var prevAtt float64
	for _, n := range []int{16384, 32768, 65536, 131072} {
		for _, chunk := range []int{2048, 8192} {
			_, b := prefill(s, n, chunk)
			if b.FullPairs2 != n*(n+1) {
				t.Errorf("N=%d chunk %d: full-attention pairs×2 %d, want N(N+1) = %d", n, chunk, b.FullPairs2, n*(n+1))
			}
			// Sliding: the first w queries see 1..w keys, the rest w each.
			if want := w*(w+1) + 2*(n-w)*w; b.SlidePairs2 != want {
				t.Errorf("N=%d chunk %d: sliding pairs×2 %d, want %d", n, chunk, b.SlidePairs2, want)
			}
		}
		terms, _ := prefill(s, n, 8192)
		if prevAtt > 0 {
			// Doubling N: attention ×(4 − ε) (quadratic full layers plus
			// linear sliding ones and KV reads), everything else ×2.
			if r := terms.Attention / prevAtt; r < 3.5 || r > 4 {
				t.Errorf("N=%d: attention grew ×%.2f on doubling, want close to 4", n, r)
			}
		}
		prevAtt = terms.Attention
	}
}

// Prefill of one long prompt alone on 4×H100 (TP 4, chunks of 8192 tokens,
// built-in factors): seconds, attention's share, and the attention FLOP/s
// the model assumes (the fitted attention_compute × BF16 peak).
func Example_longContextPrefill() {
	m, _ := perfmodel.LookupModel("gpt-oss-120b")
	g, _ := perfmodel.LookupGPU("h100")
	s, err := perfmodel.NewSystem(m, g, perfmodel.SystemOptions{TensorParallel: 4, CUDAGraphs: true})
	if err != nil {
		panic(err)
	}
	for _, n := range []int{8192, 16384, 32768, 65536, 131072} {
		terms, _ := prefill(s, n, 8192)
		fmt.Printf("%6d tokens: %6.3f s, attention %2.0f %%\n", n, terms.Sum(), 100*terms.Attention/terms.Sum())
	}
	fmt.Printf("attention at %.0f TFLOP/s per GPU\n", s.Factors().AttentionCompute*g.BF16FLOPS/1e12)
	// Output:
	//   8192 tokens:  0.124 s, attention  3 %
	//  16384 tokens:  0.255 s, attention  6 %
	//  32768 tokens:  0.539 s, attention 11 %
	//  65536 tokens:  1.196 s, attention 20 %
	// 131072 tokens:  2.864 s, attention 33 %
	// attention at 670 TFLOP/s per GPU
}
