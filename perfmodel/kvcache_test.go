package perfmodel

import (
	"strings"
	"testing"
)

func TestKVCacheTokensByHand(t *testing.T) {
	g := toyGPU()
	g.HBMBytes = 4 * gib
	s := mustSystem(t, toyModel(), g, SystemOptions{Factors: toyFactors(), MaxNumBatchedTokens: 16, MaxNumSeqs: 2})
	// Weights: attention 2 × 192, MLP 2 × 384, embedding + LM head 2 × 80, all
	// BF16 → 2624 B. Reserve: 16 tokens × (4·8 + (2+2)·4 + 48) × 2 B = 3072 B,
	// logits 2 × 10 × 4 B × 2 = 160 B, non-torch 1 GiB.
	checkClose(t, "weights", s.WeightBytesPerGPU(), 2624)
	checkClose(t, "reserve", s.ActivationReserveBytesPerGPU(), 3232+gib)
	// KV per token: 1 full layer × 2 × 1 head × 4 × 2 B = 16 B.
	checkClose(t, "kv bytes per token", s.KVBytesPerToken(), 16)
	got, err := s.KVCacheTokens(0.5)
	if err != nil {
		t.Fatal(err)
	}
	want := int((2*gib-2624-3232-gib)/16) / 16 * 16
	if got != want {
		t.Errorf("KV tokens %d, want %d", got, want)
	}
	blocks, _ := s.KVCacheBlocks(0.5)
	if blocks != want/16 {
		t.Errorf("blocks %d, want %d", blocks, want/16)
	}
	for _, u := range []float64{0, -0.1, 1.5} {
		if _, err := s.KVCacheTokens(u); err == nil {
			t.Errorf("utilisation %g accepted", u)
		}
	}
}

func TestKVCacheGptOss(t *testing.T) {
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("h100")
	prev := 0
	for _, tp := range []int{1, 2, 4, 8} {
		s := mustSystem(t, m, g, SystemOptions{TensorParallel: tp, MaxNumBatchedTokens: 8192})
		// 18 full layers × 2 × 8 heads × 64 × 2 B, however the heads are split.
		checkClose(t, "kv bytes per token", s.KVBytesPerToken(), 36864)
		n, err := s.KVCacheTokens(0.9)
		if err != nil {
			t.Fatal(err)
		}
		if n <= prev {
			t.Errorf("TP %d holds %d tokens, not more than %d", tp, n, prev)
		}
		prev = n
	}
	s := mustSystem(t, m, g, SystemOptions{})
	// 1000 tokens: 63 full blocks, plus the 128-token window and one block
	// (9 blocks) in the sliding group of equal size.
	if got := s.KVTokensForSeq(1000); got != 1008+144 {
		t.Errorf("KVTokensForSeq(1000) = %d, want 1152", got)
	}
	if got := s.KVTokensForSeq(10); got != 32 {
		t.Errorf("KVTokensForSeq(10) = %d, want 32", got)
	}
	if got := s.KVTokensForSeq(0); got != 0 {
		t.Errorf("KVTokensForSeq(0) = %d", got)
	}
}

func TestKVCacheWeightsDoNotFit(t *testing.T) {
	m, _ := LookupModel("llama-3.1-70b")
	g, _ := LookupGPU("h100")
	s := mustSystem(t, m, g, SystemOptions{})
	_, err := s.KVCacheTokens(0.9)
	if err == nil || !strings.Contains(err.Error(), "weights need") {
		t.Fatalf("70B BF16 on one H100: %v", err)
	}
	s = mustSystem(t, m, g, SystemOptions{TensorParallel: 2})
	if _, err := s.KVCacheTokens(0.9); err != nil {
		t.Errorf("70B on 2×H100: %v", err)
	}
}
