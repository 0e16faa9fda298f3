package perfmodel

import (
	"math/rand/v2"
	"testing"
)

func benchSystem(b *testing.B) *System {
	m, err := LookupModel("gpt-oss-120b")
	if err != nil {
		b.Fatal(err)
	}
	g, err := LookupGPU("h100")
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewSystem(m, g, SystemOptions{TensorParallel: 4, CUDAGraphs: true})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkStep256 prices a mixed batch of 255 decodes and one prefill chunk,
// the simulator's hot path.
func BenchmarkStep256(b *testing.B) {
	s := benchSystem(b)
	r := rand.New(rand.NewPCG(1, 2))
	batch := make([]Seq, 256)
	for i := range batch {
		batch[i] = Seq{NewTokens: 1, ContextTokens: r.IntN(100000)}
	}
	batch[0] = Seq{NewTokens: 2048, ContextTokens: 4096}
	b.ReportAllocs()
	var sink float64
	for b.Loop() {
		sink += s.Step(batch).Seconds
	}
	_ = sink
}

// BenchmarkStepShape prices a precomputed shape (incremental callers).
func BenchmarkStepShape(b *testing.B) {
	s := benchSystem(b)
	sh := s.Shape([]Seq{{NewTokens: 2048, ContextTokens: 4096}, {NewTokens: 1, ContextTokens: 30000}})
	b.ReportAllocs()
	var sink float64
	for b.Loop() {
		sink += s.StepShape(sh).Seconds
	}
	_ = sink
}
