package perfmodel

import (
	"strings"
	"testing"
)

func TestEnvelopeCheck(t *testing.T) {
	e := Envelope{GPUs: []string{"b200", "h100"}, TensorParallel: IntRange{1, 8}, PromptTokens: IntRange{819, 8192},
		OutputTokens: IntRange{819, 8192}, Concurrency: IntRange{4, 128}, PrefixCaching: []bool{false}}
	inside := OperatingPoint{GPU: "H100-SXM", TensorParallel: 4, PromptTokens: IntRange{1000, 8000},
		OutputTokens: IntRange{1000, 1000}, Concurrency: 64}
	if xs := e.Check(inside); len(xs) != 0 {
		t.Errorf("inside point: %v", xs)
	}
	out := inside
	out.GPU = "h200"
	out.PromptTokens = IntRange{5000, 131072}
	out.OutputTokens = IntRange{400, 2000}
	out.Concurrency = 256
	out.PrefixCaching, out.MultiTurn = true, true
	xs := e.Check(out)
	want := []struct {
		dim    string
		factor float64
	}{{"gpu", 0}, {"prompt length", 16}, {"output length", 819.0 / 400}, {"concurrency", 2}, {"prefix caching", 0}, {"multi-turn sessions", 0}}
	if len(xs) != len(want) {
		t.Fatalf("excursions %v, want %d", xs, len(want))
	}
	for i, w := range want {
		if xs[i].Dimension != w.dim || xs[i].Factor != w.factor {
			t.Errorf("excursion %d: %+v, want %s ×%g", i, xs[i], w.dim, w.factor)
		}
	}
	if s := xs[1].String(); !strings.Contains(s, "prompt length up to 131072 tokens outside the calibration's 819–8192 tokens (16×)") {
		t.Errorf("String: %s", s)
	}
}
