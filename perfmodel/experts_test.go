package perfmodel

import "testing"

// A step's MoE cost reads the experts it touches from a table up to the
// token budget and computes them past it: both give the same cost to the
// bit, at the table's last entry and beyond it.
func TestActiveExpertsTableMatchesTheFormula(t *testing.T) {
	m, err := LookupModel("gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGPU("h100")
	if err != nil {
		t.Fatal(err)
	}
	small, err := NewSystem(m, g, SystemOptions{TensorParallel: 4, CUDAGraphs: true, MaxNumBatchedTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	large, err := NewSystem(m, g, SystemOptions{TensorParallel: 4, CUDAGraphs: true, MaxNumBatchedTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if len(small.c.activeExperts) != 65 || len(large.c.activeExperts) != 4097 {
		t.Fatalf("tables of %d and %d entries, want 65 and 4097", len(small.c.activeExperts), len(large.c.activeExperts))
	}
	for _, n := range []int{1, 2, 17, 63, 64, 65, 100, 1000, 4096} {
		batch := []Seq{{NewTokens: n, ContextTokens: 3000}}
		// the budget sizes only the activation reserve, not a step's cost
		if a, b := small.Step(batch), large.Step(batch); a.Terms.MoE != b.Terms.MoE || a.Seconds != b.Seconds {
			t.Errorf("%d tokens: MoE %g s from %s, %g s from %s", n, a.Terms.MoE, path(small, n), b.Terms.MoE, path(large, n))
		}
	}
}

func path(s *System, n int) string {
	if n < len(s.c.activeExperts) {
		return "the table"
	}
	return "the formula"
}
